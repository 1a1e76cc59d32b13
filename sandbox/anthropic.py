"""A fake Anthropic Messages API on loopback (the SDK talks HTTP to it; no network)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sandbox.http import HttpFake, HttpRequest, HttpResponse, json_response


@dataclass
class AnthropicReply:
    status: int = 200
    text: str = "- 特になし"
    input_tokens: int = 100
    output_tokens: int = 10
    delay: float = 0.0
    error: dict[str, Any] = field(
        default_factory=lambda: {"type": "api_error", "message": "Internal server error"}
    )


@dataclass
class AnthropicRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeAnthropic(HttpFake):
    """`POST /v1/messages` answered from `reply`; every request recorded in `requests`."""

    name = "fake-anthropic"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0):
        super().__init__(host=host, port=port)
        self.reply = AnthropicReply()
        self.requests: list[AnthropicRequest] = []
        self.answered = 0
        """Replies sent so far (a held reply counts once release_held() let it go)."""

    def answer(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return json_response(501, {"type": "error", "error": {"message": "Unsupported method"}})
        path = f"{request.path}?{request.query_string}" if request.query_string else request.path
        status, payload = self.respond(
            AnthropicRequest(path, request.headers, json.loads(request.body or b"{}"))
        )
        return json_response(status, payload)

    def respond(self, request: AnthropicRequest) -> tuple[int, dict[str, Any]]:
        self.requests.append(request)
        reply = self.reply
        self.hold(reply.delay)
        self.answered += 1
        if reply.status != 200:
            return reply.status, {"type": "error", "error": reply.error}
        return 200, {
            "id": f"msg_{len(self.requests):04d}",
            "type": "message",
            "role": "assistant",
            "model": request.body.get("model", ""),
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }

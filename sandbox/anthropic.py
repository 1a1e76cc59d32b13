"""A fake Anthropic Messages API on loopback (the SDK talks HTTP to it; no network)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class FakeAnthropic:
    """`POST /v1/messages` answered from `reply`; every request recorded in `requests`."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0):
        self.reply = AnthropicReply()
        self.requests: list[AnthropicRequest] = []
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def respond(self, request: AnthropicRequest) -> tuple[int, dict[str, Any]]:
        self.requests.append(request)
        reply = self.reply
        time.sleep(reply.delay)
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


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = fake.respond(AnthropicRequest(self.path, headers, body))
            data = json.dumps(payload, ensure_ascii=False).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out first

        def log_message(self, *args) -> None:
            pass

    return Handler

"""The fake LINE's channel settings over the API: the bot's info and the webhook endpoint
(get, set, test), as the Messaging API reference documents them:
https://developers.line.biz/en/reference/messaging-api/#get-bot-info,
#get-webhook-endpoint-information, #set-webhook-endpoint-url, #test-webhook-endpoint.

The endpoint must be an HTTPS URL of at most 500 characters; the sandbox may allow plain http
for hosts it names (`http_hosts`: automedia on loopback), which LINE itself never does. The test
posts a webhook with no events, signed with the channel secret (`x-line-signature`,
https://developers.line.biz/en/reference/messaging-api/#signature-validation), to the
endpoint and answers what it got back.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

from sandbox.line.records import LineError, LineReply, LineRequest

MAX_ENDPOINT = 500
TEST_TIMEOUT = 10.0


@dataclass
class ChannelSettings:
    bot_user_id: str = "U0fake0bot0000000000000000000000"
    basic_id: str = "@fakeline"
    display_name: str = "automedia サンドボックス"
    channel_secret: str = ""  # signs the webhook test; empty: the test goes unsigned
    webhook_endpoint: str = ""
    webhook_active: bool = True  # "Use webhook" in the LINE Developers console
    http_hosts: frozenset[str] = field(default_factory=frozenset)
    tests: list[dict] = field(default_factory=list)  # every test's answer, oldest first


class ChannelApi:
    def __init__(self, settings: ChannelSettings) -> None:
        self.settings = settings

    def routes(self) -> dict[str, dict]:
        return {
            "/v2/bot/info": {"GET": self.bot_info},
            "/v2/bot/channel/webhook/endpoint": {"GET": self.endpoint, "PUT": self.set_endpoint},
            "/v2/bot/channel/webhook/test": {"POST": self.test},
        }

    def bot_info(self, request: LineRequest, request_id: str) -> LineReply:
        s = self.settings
        body = {
            "userId": s.bot_user_id,
            "basicId": s.basic_id,
            "displayName": s.display_name,
            "chatMode": "bot",
            "markAsReadMode": "auto",
        }
        return LineReply(200, body)

    def endpoint(self, request: LineRequest, request_id: str) -> LineReply:
        return LineReply(
            200, {"endpoint": self.settings.webhook_endpoint, "active": self.settings.webhook_active}
        )

    def set_endpoint(self, request: LineRequest, request_id: str) -> LineReply:
        self._json(request)
        endpoint = request.body.get("endpoint") if isinstance(request.body, dict) else None
        self.settings.webhook_endpoint = self._valid(endpoint)
        return LineReply(200, {})

    def test(self, request: LineRequest, request_id: str) -> LineReply:
        endpoint = request.body.get("endpoint") if isinstance(request.body, dict) else None
        target = self._valid(endpoint) if endpoint is not None else self.settings.webhook_endpoint
        if not target:
            raise LineError(400, "The webhook endpoint is not set")
        answer = self._post(target)
        self.settings.tests.append(answer)
        return LineReply(200, answer)

    def _valid(self, endpoint: object) -> str:
        if not isinstance(endpoint, str) or not endpoint or len(endpoint) > MAX_ENDPOINT:
            raise LineError(400, "Invalid webhook endpoint URL")
        parts = urlsplit(endpoint)
        https = parts.scheme == "https" and parts.hostname
        allowed_http = parts.scheme == "http" and parts.hostname in self.settings.http_hosts
        if not (https or allowed_http):
            raise LineError(400, "Invalid webhook endpoint URL: use HTTPS")
        return endpoint

    @staticmethod
    def _json(request: LineRequest) -> None:
        if not request.headers.get("content-type", "").startswith("application/json") or not request.parsed:
            raise LineError(400, "The request body could not be parsed as JSON")

    def _post(self, target: str) -> dict:
        body = json.dumps({"destination": self.settings.bot_user_id, "events": []}).encode()
        headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "LineBotWebhook/2.0"}
        if self.settings.channel_secret:
            digest = hmac.new(self.settings.channel_secret.encode(), body, hashlib.sha256).digest()
            headers["x-line-signature"] = base64.b64encode(digest).decode()
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        try:
            response = httpx.post(target, content=body, headers=headers, timeout=TEST_TIMEOUT)
        except httpx.HTTPError as exc:
            return {
                "success": False,
                "timestamp": stamp,
                "statusCode": 0,
                "reason": "Could not connect",
                "detail": type(exc).__name__,
            }
        ok = 200 <= response.status_code < 300
        return {
            "success": ok,
            "timestamp": stamp,
            "statusCode": response.status_code,
            "reason": "OK" if ok else "Unexpected HTTP status code",
            "detail": str(response.status_code),
        }

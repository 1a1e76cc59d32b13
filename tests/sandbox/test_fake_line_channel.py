"""The fake LINE's channel endpoints over loopback HTTP: the bot's info and the webhook
endpoint (get, set, test), as the Messaging API reference documents them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from sandbox.line import FakeLine

TOKEN = "channel-token"
SECRET = "channel-secret"
ENDPOINT = "/v2/bot/channel/webhook/endpoint"


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine(channel_tokens={TOKEN}, channel_secret=SECRET) as line:
        yield line


def call(
    fake: FakeLine, method: str, path: str, body: dict | None = None, token: str = TOKEN
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.request(method, f"{fake.base_url}{path}", json=body, headers=headers, timeout=5)


def test_it_answers_the_bots_info(fake):
    info = call(fake, "GET", "/v2/bot/info").json()

    assert {"userId", "basicId", "displayName", "chatMode", "markAsReadMode"} <= set(info)


def test_it_refuses_a_token_it_does_not_know(fake):
    assert call(fake, "GET", "/v2/bot/info", token="other").status_code == 401


def test_it_sets_and_reads_back_the_webhook_endpoint(fake):
    assert (
        call(fake, "PUT", ENDPOINT, {"endpoint": "https://automedia.example.jp/hooks/line/acme"}).json() == {}
    )

    assert call(fake, "GET", ENDPOINT).json() == {
        "endpoint": "https://automedia.example.jp/hooks/line/acme",
        "active": True,
    }


@pytest.mark.parametrize("endpoint", ["http://automedia.example.jp/hook", "", "https://x/" + "a" * 500, 42])
def test_it_refuses_an_endpoint_that_is_no_https_url(fake, endpoint):
    answer = call(fake, "PUT", ENDPOINT, {"endpoint": endpoint})

    assert answer.status_code == 400 and fake.channel.webhook_endpoint == ""


class Receiver(BaseHTTPRequestHandler):
    seen: list[tuple[dict, str]] = []

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.seen.append((json.loads(raw), self.headers.get("x-line-signature", "")))
        good = hmac.compare_digest(
            self.headers.get("x-line-signature", ""),
            base64.b64encode(hmac.new(SECRET.encode(), raw, hashlib.sha256).digest()).decode(),
        )
        self.send_response(200 if good else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks/line/acme"
    server.shutdown()
    server.server_close()


def test_its_webhook_test_posts_a_signed_empty_event_list_and_reports_the_answer(fake, receiver):
    fake.channel.http_hosts = frozenset({"127.0.0.1"})  # the sandbox's concession to loopback
    call(fake, "PUT", ENDPOINT, {"endpoint": receiver})

    answer = call(fake, "POST", "/v2/bot/channel/webhook/test", {}).json()

    assert answer["success"] is True and answer["statusCode"] == 200 and answer["reason"] == "OK"
    [(body, _signature)] = Receiver.seen
    assert body == {"destination": fake.channel.bot_user_id, "events": []}


def test_its_webhook_test_reports_an_endpoint_that_does_not_answer(fake):
    fake.channel.http_hosts = frozenset({"127.0.0.1"})

    answer = call(
        fake, "POST", "/v2/bot/channel/webhook/test", {"endpoint": "http://127.0.0.1:9/hook"}
    ).json()

    assert answer["success"] is False and answer["statusCode"] == 0


def test_its_webhook_test_needs_an_endpoint(fake):
    assert call(fake, "POST", "/v2/bot/channel/webhook/test", {}).status_code == 400

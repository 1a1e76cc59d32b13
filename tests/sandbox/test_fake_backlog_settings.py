"""The fake Backlog's project settings over loopback HTTP: Add Status, Add Custom Field, the
webhooks, with Backlog's parameters and roles (a key without the Administrator role: 403)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from sandbox.backlog import FakeBacklog

API_KEY = "secret-key"
BARE = [(1, "未対応"), (2, "処理中"), (3, "処理済み"), (4, "完了")]


@pytest.fixture
def fake() -> Iterator[FakeBacklog]:
    with FakeBacklog(api_key=API_KEY, webhook_mode="post") as backlog:
        backlog.add_project("BARE", statuses=BARE, custom_fields=())
        yield backlog


def call(fake: FakeBacklog, method: str, path: str, data: dict | None = None) -> httpx.Response:
    return httpx.request(
        method, f"{fake.base_url}/api/v2/{path}", params={"apiKey": API_KEY}, data=data, timeout=5
    )


def test_it_adds_a_status_with_a_documented_colour(fake):
    answer = call(fake, "POST", "projects/BARE/statuses", {"name": "automedia承認", "color": "#868cb7"})

    assert answer.status_code == 200
    assert (
        answer.json()["name"] == "automedia承認" and answer.json()["projectId"] == fake._projects["BARE"].id
    )
    names = [s["name"] for s in call(fake, "GET", "projects/BARE/statuses").json()]
    assert names[-1] == "automedia承認"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x"}, "'color' is required."),
        ({"name": "x", "color": "#000000"}, "'color' must be one of"),
        ({"name": "処理中", "color": "#868cb7"}, "already exists"),
        ({"name": "x", "color": "#868cb7", "colour": "red"}, "Undefined parameter 'colour'."),
    ],
)
def test_it_refuses_a_status_backlog_refuses(fake, data, message):
    answer = call(fake, "POST", "projects/BARE/statuses", data)

    assert answer.status_code == 400 and message in answer.json()["errors"][0]["message"]


def test_it_takes_at_most_eight_statuses_beyond_the_default_four(fake):
    for n in range(8):
        assert call(fake, "POST", "projects/BARE/statuses", {"name": f"s{n}", "color": "#868cb7"}).is_success

    answer = call(fake, "POST", "projects/BARE/statuses", {"name": "s9", "color": "#868cb7"})

    assert answer.status_code == 400


def test_it_adds_a_text_custom_field_and_gives_every_issue_its_empty_value(fake):
    fake.create_issue("BARE", summary="前からある課題")

    answer = call(fake, "POST", "projects/BARE/customFields", {"typeId": "1", "name": "投稿日時"})

    assert answer.status_code == 200 and answer.json()["typeId"] == 1
    [value] = call(fake, "GET", "issues/BARE-1").json()["customFields"]
    assert (value["name"], value["value"]) == ("投稿日時", None)


def test_it_refuses_a_custom_field_without_its_required_parameters(fake):
    assert call(fake, "POST", "projects/BARE/customFields", {"name": "x"}).status_code == 400
    assert call(fake, "POST", "projects/BARE/customFields", {"typeId": "1"}).status_code == 400


class Receiver(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self) -> None:
        Receiver.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def test_a_webhook_added_for_some_activity_types_receives_only_those(fake, receiver):
    data = {"name": "automedia", "hookUrl": receiver, "allEvent": "false", "activityTypeIds[]": ["2"]}
    added = call(fake, "POST", "projects/BARE/webhooks", data)
    fake.create_issue("BARE", summary="作成（種別 1）")
    fake.update_issue("BARE-1", summary="更新（種別 2）")
    fake.flush_webhooks()

    assert added.status_code == 200 and added.json()["activityTypeIds"] == [2]
    assert [h["hookUrl"] for h in call(fake, "GET", "projects/BARE/webhooks").json()] == [receiver]
    assert [body["type"] for body in Receiver.bodies] == [2]


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("POST", "projects/BARE/statuses", {"name": "x", "color": "#868cb7"}),
        ("POST", "projects/BARE/customFields", {"typeId": "1", "name": "x"}),
        ("GET", "projects/BARE/webhooks", None),
        ("POST", "projects/BARE/webhooks", {"name": "x", "hookUrl": "https://example.jp/"}),
    ],
)
def test_a_key_without_the_administrator_role_is_refused_403(fake, method, path, data):
    fake.api_user_role = 2

    answer = call(fake, method, path, data)

    assert answer.status_code == 403 and answer.json()["errors"][0]["code"] == 5
    assert call(fake, "GET", "users/myself").json()["roleType"] == 2


def test_an_unknown_project_is_404_before_the_role_is_asked(fake):
    fake.api_user_role = 2

    assert call(fake, "POST", "projects/NOPE/statuses", {"name": "x", "color": "#868cb7"}).status_code == 404

"""The fake Backlog, exercised over real loopback HTTP as the client code will use it."""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from sandbox.backlog import BOT, HUMAN, JST, REAL_LATENCY, FakeBacklog, RecordedRequest
from sandbox.backlog.cli import latency_arg
from tests.helpers.waiting import eventually

API_KEY = "secret-key"


class Receiver:
    """A webhook endpoint on loopback that keeps every JSON body it is sent."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                receiver.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def fake() -> Iterator[FakeBacklog]:
    with FakeBacklog(api_key=API_KEY, latency=0) as fake:
        fake.add_project("DEMO", project_id=100)
        yield fake


@pytest.fixture
def api(fake: FakeBacklog) -> Iterator[httpx.Client]:
    base_url = f"{fake.base_url}/api/v2"
    with httpx.Client(base_url=base_url, params={"apiKey": API_KEY}, timeout=2) as client:
        yield client


def _error_code(response: httpx.Response) -> int:
    return response.json()["errors"][0]["code"]


def test_it_rejects_a_wrong_or_missing_api_key(fake: FakeBacklog) -> None:
    wrong = httpx.get(f"{fake.base_url}/api/v2/users/myself", params={"apiKey": "nope"})
    missing = httpx.get(f"{fake.base_url}/api/v2/users/myself")

    expected = {"errors": [{"message": "Authentication failure.", "code": 11, "moreInfo": ""}]}
    assert (wrong.status_code, wrong.json()) == (401, expected)
    assert (missing.status_code, missing.json()) == (401, expected)


def test_it_takes_the_api_key_from_the_backlog_api_key_header(fake: FakeBacklog) -> None:
    url = f"{fake.base_url}/api/v2/users/myself"
    right = httpx.get(url, headers={"Backlog-API-Key": API_KEY})
    wrong = httpx.get(url, headers={"Backlog-API-Key": "nope"}, params={"apiKey": API_KEY})

    assert right.status_code == 200
    assert wrong.status_code == 401  # the header, when sent, is the key
    assert fake.requests[0].api_key_header == API_KEY


def test_it_answers_as_slowly_as_backlog_by_default() -> None:
    assert FakeBacklog(api_key=API_KEY).latency == REAL_LATENCY == (0.15, 0.30)


def test_calls_made_together_wait_out_its_latency_together(fake: FakeBacklog) -> None:
    fake.set_latency(0.3)
    calls = [
        threading.Thread(
            target=httpx.get,
            args=(f"{fake.base_url}/api/v2/users/myself",),
            kwargs={"params": {"apiKey": API_KEY}},
        )
        for _ in range(3)
    ]
    for call in calls:
        call.start()
    for call in calls:
        call.join()

    assert fake.max_in_flight == 3


def test_it_refuses_a_latency_below_zero_or_an_upside_down_range(fake: FakeBacklog) -> None:
    for latency in (-0.1, (0.3, 0.1)):
        with pytest.raises(ValueError):
            fake.set_latency(latency)


def test_its_command_line_takes_seconds_or_a_range() -> None:
    assert (latency_arg("0.25"), latency_arg("0.15-0.3")) == (0.25, (0.15, 0.3))
    with pytest.raises(argparse.ArgumentTypeError):
        latency_arg("slow")


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Api-Key": API_KEY},  # no Backlog page names it
        {"Authorization": f"Bearer {API_KEY}"},  # OAuth's header, not the API key's
        {"apiKey": API_KEY},  # the parameter's name as a header
    ],
)
def test_it_refuses_the_key_anywhere_else_as_backlog_does(fake: FakeBacklog, headers) -> None:
    response = httpx.post(
        f"{fake.base_url}/api/v2/issues/DEMO-1/comments", headers=headers, data={"content": "x"}
    )

    assert response.status_code == 401
    assert response.json() == {"errors": [{"message": "Authentication failure.", "code": 11, "moreInfo": ""}]}


def test_it_answers_the_api_key_user(api: httpx.Client) -> None:
    response = api.get("/users/myself")

    assert response.status_code == 200
    assert response.json() == BOT


def test_it_answers_404_to_a_trailing_slash(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")

    assert api.get("/issues/").status_code == 404
    assert api.get("/issues/DEMO-1/").status_code == 404
    assert api.get("/issues").status_code == 200


def test_it_sends_rate_limit_headers_on_every_answer(api: httpx.Client) -> None:
    for response in (api.get("/users/myself"), api.get("/issues/DEMO-99")):
        assert response.headers["X-RateLimit-Limit"] == "100000"
        assert int(response.headers["X-RateLimit-Remaining"]) < 100_000
        assert int(response.headers["X-RateLimit-Reset"]) > time.time()


def test_it_enforces_a_rate_limit_per_group_and_window_once_set(fake: FakeBacklog, api: httpx.Client) -> None:
    now = [1_800_000_010.0]
    fake.clock = lambda: now[0]
    key = fake.create_issue("DEMO", summary="告知")["issueKey"]
    fake.set_rate_limits(read=2, update=1, window=60)

    reads = [api.get(f"/issues/{key}") for _ in range(3)]
    writes = [api.post(f"/issues/{key}/comments", data={"content": f"c{i}"}) for i in range(2)]

    assert [r.status_code for r in reads] == [200, 200, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in reads] == ["1", "0", "0"]
    assert {r.headers["X-RateLimit-Reset"] for r in reads + writes} == {"1800000060"}
    assert [r.status_code for r in writes] == [201, 429]
    assert [c["content"] for c in fake.comments(key)] == ["c0"]  # the refused call changed nothing
    assert fake.rate_limited == 2
    now[0] = 1_800_000_060.0  # the next window
    assert api.get(f"/issues/{key}").status_code == 200
    assert api.post(f"/issues/{key}/comments", data={"content": "c1"}).status_code == 201


def test_limits_set_mid_window_do_not_count_the_calls_made_before(
    fake: FakeBacklog, api: httpx.Client
) -> None:
    now = [1_800_000_010.0]
    fake.clock = lambda: now[0]
    key = fake.create_issue("DEMO", summary="告知")["issueKey"]
    for i in range(3):  # under the default limits
        assert api.post(f"/issues/{key}/comments", data={"content": f"before {i}"}).status_code == 201

    fake.set_rate_limits(read=10, update=2, window=60)
    writes = [api.post(f"/issues/{key}/comments", data={"content": f"c{i}"}) for i in range(3)]

    assert [r.status_code for r in writes] == [201, 201, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in writes] == ["1", "0", "0"]


def test_it_counts_but_does_not_enforce_by_default(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.rate_limit_per_minute = 2
    statuses = [api.get("/users/myself").status_code for _ in range(4)]

    assert statuses == [200] * 4 and fake.rate_limited == 0


def test_it_returns_an_issue_by_key_or_id(fake: FakeBacklog, api: httpx.Client) -> None:
    created = fake.create_issue(
        "DEMO", summary="告知", description="本文", custom_fields={"投稿日時": "2026-05-15 10:00"}
    )

    by_key = api.get("/issues/DEMO-1").json()
    by_id = api.get(f"/issues/{created['id']}").json()

    assert by_key == by_id == created
    assert by_key["issueKey"] == "DEMO-1"
    assert by_key["keyId"] == 1
    assert by_key["projectId"] == 100
    assert by_key["status"] == {
        "id": 1,
        "projectId": 100,
        "name": "未対応",
        "color": "#ea2c00",
        "displayOrder": 1000,
    }
    assert by_key["customFields"] == [
        {"id": 101, "fieldTypeId": 1, "name": "投稿日時", "value": "2026-05-15 10:00"},
        {"id": 102, "fieldTypeId": 1, "name": "自動配信実行日時", "value": None},
    ]


def test_it_answers_404_for_an_unknown_issue(api: httpx.Client) -> None:
    response = api.get("/issues/DEMO-404")

    assert response.status_code == 404
    assert response.json() == {"errors": [{"message": "No issue.", "code": 6, "moreInfo": ""}]}


def test_it_describes_the_project(api: httpx.Client) -> None:
    statuses = api.get("/projects/DEMO/statuses").json()
    fields = api.get("/projects/100/customFields").json()

    assert api.get("/projects/DEMO").json()["projectKey"] == "DEMO"
    assert [(s["id"], s["name"]) for s in statuses][4:] == [
        (5, "automedia承認"),
        (6, "automedia実行済み"),
        (7, "automediaエラー"),
    ]
    assert [(f["id"], f["name"], f["typeId"]) for f in fields] == [
        (101, "投稿日時", 1),
        (102, "自動配信実行日時", 1),
    ]


def test_it_applies_one_patch_as_one_activity_and_one_webhook(receiver: Receiver) -> None:
    with FakeBacklog(api_key=API_KEY, webhook_mode="post") as fake:
        fake.add_project("DEMO", project_id=100)
        fake.set_webhook("DEMO", f"{receiver.url}/hooks/backlog/token123")
        fake.create_issue("DEMO", summary="告知", status="処理中")
        assert fake.flush_webhooks()
        del receiver.bodies[:], receiver.paths[:]

        response = httpx.patch(
            f"{fake.base_url}/api/v2/issues/DEMO-1",
            params={"apiKey": API_KEY},
            data={"statusId": "5", "customField_102": "2026-05-15T10:00:00+09:00", "comment": "OK"},
        )
        assert fake.flush_webhooks()
        activities = httpx.get(
            f"{fake.base_url}/api/v2/projects/DEMO/activities", params={"apiKey": API_KEY}
        ).json()

    assert response.status_code == 200
    assert response.json()["status"]["name"] == "automedia承認"
    assert response.json()["customFields"][1]["value"] == "2026-05-15T10:00:00+09:00"
    assert response.json()["updatedUser"] == BOT
    [activity] = receiver.bodies
    assert receiver.paths == ["/hooks/backlog/token123"]
    assert activity == fake.outbox[-1] == activities[0]
    assert [a["type"] for a in activities] == [2, 1]
    assert activity["type"] == 2
    assert activity["project"]["projectKey"] == "DEMO"
    assert activity["createdUser"] == BOT
    assert activity["notifications"] == []
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", activity["created"])
    content = activity["content"]
    assert (content["id"], content["key_id"], content["summary"]) == (10_001, 1, "告知")
    assert content["comment"]["content"] == "OK"
    assert content["changes"] == [
        {"field": "status", "new_value": "5", "old_value": "2", "type": "standard"},
        {
            "field": "自動配信実行日時",
            "field_text": "自動配信実行日時",
            "new_value": "2026-05-15T10:00:00+09:00",
            "old_value": "",
            "type": "customAttribute",
        },
    ]
    assert fake.comments("DEMO-1")[0]["id"] == content["comment"]["id"]


def test_it_rejects_an_invalid_status_id(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")

    response = api.patch("/issues/DEMO-1", data={"statusId": "42"})

    assert response.status_code == 400
    assert fake.issue("DEMO-1")["status"]["id"] == 1
    assert len(fake.outbox) == 1


def test_it_rejects_an_unknown_parameter(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")

    patched = api.patch("/issues/DEMO-1", data={"statusId": "5", "status": "5"})
    listed = api.get("/issues", params={"projectId": "100"})

    assert patched.status_code == listed.status_code == 400
    assert _error_code(patched) == 7
    assert fake.issue("DEMO-1")["status"]["id"] == 1


def test_it_pages_issues_filtered_by_status(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.add_project("OTHER", project_id=200)
    for number in range(1, 26):
        status = "automedia承認" if number % 2 else "処理中"
        fake.create_issue("DEMO", summary=f"告知 {number}", status=status)
    fake.create_issue("OTHER", summary="別案件", status="automedia承認")
    params = {"projectId[]": "100", "statusId[]": "5", "count": "5"}

    pages = [api.get("/issues", params={**params, "offset": str(o)}).json() for o in (0, 5, 10)]
    count = api.get("/issues/count", params={"projectId[]": "100", "statusId[]": "5"}).json()
    oldest = api.get("/issues", params={**params, "sort": "created", "order": "asc"}).json()

    assert [len(page) for page in pages] == [5, 5, 3]
    issues = [issue for page in pages for issue in page]
    assert {issue["keyId"] for issue in issues} == set(range(1, 26, 2))
    assert {issue["status"]["id"] for issue in issues} == {5}
    order = [(issue["updated"], issue["id"]) for issue in issues]
    assert order == sorted(order, reverse=True)
    assert count == {"count": 13}
    assert [issue["keyId"] for issue in oldest] == [1, 3, 5, 7, 9]


def test_it_rejects_a_count_outside_1_to_100(api: httpx.Client) -> None:
    for count in ("0", "101", "many"):
        response = api.get("/issues", params={"count": count})
        assert response.status_code == 400
        assert _error_code(response) == 7
    assert api.get("/issues", params={"count": "100"}).status_code == 200


def test_it_lists_activities_after_min_id(fake: FakeBacklog, api: httpx.Client) -> None:
    for number in range(3):
        fake.create_issue("DEMO", summary=f"告知 {number}")
    path = "/projects/DEMO/activities"

    newest_first = api.get(path, params={"minId": "1"}).json()
    oldest_first = api.get(path, params={"minId": "1", "order": "asc", "count": "1"}).json()
    between = api.get(path, params={"minId": "1", "maxId": "3"}).json()

    assert [a["id"] for a in newest_first] == [3, 2]
    assert [a["id"] for a in oldest_first] == [2]
    assert [a["id"] for a in between] == [2]
    assert newest_first[0]["content"] == {
        "id": 10_003,
        "key_id": 3,
        "summary": "告知 2",
        "description": "",
    }


def test_it_fails_the_next_matching_call_then_recovers(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")
    fake.fail_next(503, method="PATCH", path_prefix="/api/v2/issues/DEMO-1")

    unaffected = api.get("/issues/DEMO-1")
    failed = api.patch("/issues/DEMO-1", data={"statusId": "5"})
    recovered = api.patch("/issues/DEMO-1", data={"statusId": "5"})

    assert unaffected.status_code == 200
    assert (failed.status_code, _error_code(failed)) == (503, 1)
    assert recovered.status_code == 200
    assert [a["type"] for a in fake.outbox] == [1, 2]


def test_it_answers_503_inside_an_outage_window_and_changes_nothing(
    fake: FakeBacklog, api: httpx.Client
) -> None:
    fake.create_issue("DEMO", summary="告知")
    now = [1000.0]
    fake.clock = lambda: now[0]
    fake.set_outages([(1010.0, 1030.0), (1050.0, 1070.0)])
    answers = {}

    for moment in (1009.9, 1010.0, 1029.9, 1030.0, 1055.0):
        now[0] = moment
        answers[moment] = api.patch("/issues/DEMO-1", data={"summary": f"告知 {moment}"})
    ui = httpx.get(f"{fake.base_url}/")

    assert {m: r.status_code for m, r in answers.items()} == {
        1009.9: 200,
        1010.0: 503,
        1029.9: 503,
        1030.0: 200,
        1055.0: 503,
    }
    assert _error_code(answers[1010.0]) == 1
    assert fake.issue("DEMO-1")["summary"] == "告知 1030.0"  # the calls in an outage changed nothing
    assert [r.status for r in fake.requests if r.path == "/api/v2/issues/DEMO-1"] == [200, 503, 503, 200, 503]
    assert ui.status_code == 200  # the HTML UI stays up


def test_it_ends_the_outages_with_an_empty_schedule_and_refuses_a_backward_window(
    fake: FakeBacklog, api: httpx.Client
) -> None:
    fake.set_outages([(0.0, 4_000_000_000.0)], status=502)
    down = api.get("/users/myself")

    fake.set_outages([])

    assert down.status_code == 502
    assert api.get("/users/myself").status_code == 200
    with pytest.raises(ValueError):
        fake.set_outages([(20.0, 10.0)])


def test_it_answers_429_with_the_rate_limit_reset(api: httpx.Client, fake: FakeBacklog) -> None:
    fake.fail_next(429, count=2, headers={"X-RateLimit-Reset": "1999999999"})

    first, second, third = (api.get("/users/myself") for _ in range(3))

    assert first.status_code == second.status_code == 429
    assert _error_code(first) == 13
    assert first.headers["X-RateLimit-Reset"] == "1999999999"
    assert first.headers["X-RateLimit-Remaining"] == "0"
    assert third.status_code == 200


def test_it_applies_a_delayed_patch_after_the_client_timed_out(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")
    fake.fail_next(200, method="PATCH", delay=0.3)

    with pytest.raises(httpx.ReadTimeout):
        api.patch("/issues/DEMO-1", data={"statusId": "5"}, timeout=0.05)

    eventually(lambda: fake.issue("DEMO-1")["status"]["id"] == 5, "the delayed PATCH to be applied")


def test_it_records_every_request(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")
    api.get("/issues/DEMO-1")
    fake.reset_requests()

    before = time.time()
    api.patch("/issues/DEMO-1", data={"summary": "告知（改）", "comment": "直しました"})
    api.get("/issues/DEMO-9")

    first, second = (r.received_at for r in fake.requests)
    assert before <= first <= second <= time.time()  # when each was answered
    assert fake.requests == [
        RecordedRequest(
            "PATCH",
            "/api/v2/issues/DEMO-1",
            {"apiKey": [API_KEY]},
            {"summary": ["告知（改）"], "comment": ["直しました"]},
            200,
        ),
        RecordedRequest("GET", "/api/v2/issues/DEMO-9", {"apiKey": [API_KEY]}, {}, 404),
    ]


def test_it_adds_a_comment_as_the_bot(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")

    missing = api.post("/issues/DEMO-1/comments", data={})
    added = api.post("/issues/DEMO-1/comments", data={"content": "[automedia] 予約しました"})
    listed = api.get("/issues/DEMO-1/comments", params={"order": "asc"}).json()

    assert missing.status_code == 400
    assert added.status_code == 201
    assert added.json()["createdUser"] == BOT
    assert listed == [added.json()]
    activity = fake.outbox[-1]
    assert (activity["type"], activity["content"]["comment"]) == (
        3,
        {"id": added.json()["id"], "content": "[automedia] 予約しました"},
    )


def test_it_serves_one_comment_by_id_only_on_its_own_issue(fake: FakeBacklog, api: httpx.Client) -> None:
    fake.create_issue("DEMO", summary="告知")
    fake.create_issue("DEMO", summary="別件")
    comment = fake.add_comment("DEMO-1", "/automedia status", user=HUMAN)

    found = api.get(f"/issues/DEMO-1/comments/{comment['id']}")
    elsewhere = api.get(f"/issues/DEMO-2/comments/{comment['id']}")
    missing = api.get("/issues/DEMO-1/comments/999999")

    assert found.status_code == 200
    assert (found.json()["content"], found.json()["createdUser"]) == ("/automedia status", HUMAN)
    assert found.json() == comment
    assert (elsewhere.status_code, missing.status_code) == (404, 404)
    assert missing.json()["errors"][0]["code"] == 6


def test_it_creates_an_issue_through_the_api(fake: FakeBacklog, api: httpx.Client) -> None:
    issue_type = api.get("/projects/DEMO/issueTypes").json()[0]["id"]

    response = api.post(
        "/issues",
        data={"projectId": "100", "summary": "新規", "issueTypeId": issue_type, "priorityId": "3"},
    )

    assert response.status_code == 201
    assert response.json()["issueKey"] == "DEMO-1"
    assert (fake.outbox[-1]["type"], fake.outbox[-1]["createdUser"]) == (1, BOT)


def test_it_records_a_bulk_update_as_one_type_14_activity(fake: FakeBacklog) -> None:
    for number in range(2):
        fake.create_issue("DEMO", summary=f"告知 {number}")

    fake.bulk_update(["DEMO-1", "DEMO-2"], status="automedia承認")

    activity = fake.outbox[-1]
    assert [a["type"] for a in fake.outbox] == [1, 1, 14]
    assert [(link["key_id"], link["title"]) for link in activity["content"]["link"]] == [
        (1, "告知 0"),
        (2, "告知 1"),
    ]
    assert activity["content"]["changes"] == [{"field": "status", "new_value": "5", "type": "standard"}]
    assert fake.issue("DEMO-2")["status"]["name"] == "automedia承認"


def test_it_changes_status_from_the_ui_as_the_human(fake: FakeBacklog) -> None:
    fake.create_issue("DEMO", summary="告知")

    response = httpx.post(f"{fake.base_url}/ui/issues/DEMO-1/status", data={"status": "automedia承認"})

    assert (response.status_code, response.headers["Location"]) == (303, "/")
    activity = fake.outbox[-1]
    assert (activity["type"], activity["createdUser"]) == (2, HUMAN)
    assert activity["content"]["changes"][0]["new_value"] == "5"


def test_it_creates_and_comments_issues_from_the_ui(fake: FakeBacklog) -> None:
    with httpx.Client(base_url=fake.base_url) as browser:
        browser.post(
            "/ui/projects/DEMO/issues",
            data={"summary": "UI から", "description": "本文", "posting_time": "2026-05-15 10:00"},
        )
        browser.post("/ui/issues/DEMO-1/comments", data={"content": "/automedia preview"})
        page = browser.get("/ui/issues/DEMO-1")

    issue = fake.issue("DEMO-1")
    assert (issue["summary"], issue["customFields"][0]["value"]) == ("UI から", "2026-05-15 10:00")
    assert fake.outbox[-1]["createdUser"] == HUMAN
    assert "/automedia preview" in page.text


def test_it_answers_the_issue_link_of_real_backlog(fake: FakeBacklog) -> None:
    fake.create_issue("DEMO", summary="年末セールのお知らせ")

    page = httpx.get(f"{fake.base_url}/view/DEMO-1")
    missing = httpx.get(f"{fake.base_url}/view/DEMO-9")

    assert page.status_code == 200
    assert "年末セールのお知らせ" in page.text
    assert missing.status_code == 404


def test_it_prefills_the_create_form_with_the_issue_template(fake: FakeBacklog) -> None:
    before = datetime.now(UTC)

    page = httpx.get(f"{fake.base_url}/").text
    after = datetime.now(UTC)

    assert "## 配信メタ\n- チャネル: LINE\n- 投稿日時: " in page
    assert "- 対象タグ: tag:active, !tag:opt_out\n- テンプレ: announce_open" in page
    when = re.search(r"- 投稿日時: (\d{4}-\d\d-\d\d \d\d:\d\d) \(JST\)", page)
    assert when is not None
    publish_at = datetime.strptime(when.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=JST)
    assert before + timedelta(minutes=1) <= publish_at <= after + timedelta(minutes=2)

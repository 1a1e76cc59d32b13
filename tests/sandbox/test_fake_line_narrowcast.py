"""The fake LINE's narrowcast, over loopback HTTP: audiences uploaded by user id, a 202 with
the request id, progress phases advancing with the fake's clock, errorCode 4 under 50
recipients, 5 when partial delivery is forbidden over the quota, retry keys deduplicated."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from sandbox.line import FakeLine

TOKEN = "channel-token"
TEXT = [{"type": "text", "text": "年末のお知らせ"}]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine(channel_tokens={TOKEN}) as fake:
        fake.clock = Clock()
        fake.set_narrowcast_timing(audience_seconds=10, waiting_seconds=5, sending_seconds=20)
        yield fake


@pytest.fixture
def api(fake) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=fake.base_url, headers=headers, timeout=2) as client:
        yield client


def users(n: int) -> list[dict]:
    return [{"id": f"U{i:032x}"} for i in range(n)]


def ready_audience(api, fake, n: int) -> int:
    answer = api.post("/v2/bot/audienceGroup/upload", json={"description": "tag", "audiences": users(n)})
    assert answer.status_code == 202
    fake.clock.now += 10
    return answer.json()["audienceGroupId"]


def narrowcast(api, audience_id: int, *, key: str | None = None, limit: dict | None = None) -> httpx.Response:
    body = {"messages": TEXT, "recipient": {"type": "audience", "audienceGroupId": audience_id}}
    if limit is not None:
        body["limit"] = limit
    return api.post(
        "/v2/bot/message/narrowcast", json=body, headers={"X-Line-Retry-Key": key or str(uuid.uuid4())}
    )


def progress(api, request_id: str) -> dict:
    answer = api.get("/v2/bot/message/progress/narrowcast", params={"requestId": request_id})
    assert answer.status_code == 200
    return answer.json()


def test_an_uploaded_audience_is_in_progress_then_ready_with_its_jobs(api, fake):
    created = api.post("/v2/bot/audienceGroup/upload", json={"description": "tag", "audiences": users(60)})
    audience_id = created.json()["audienceGroupId"]
    added = api.put(
        "/v2/bot/audienceGroup/upload", json={"audienceGroupId": audience_id, "audiences": users(3)}
    )

    before = api.get(f"/v2/bot/audienceGroup/{audience_id}").json()
    fake.clock.now += 10
    after = api.get(f"/v2/bot/audienceGroup/{audience_id}").json()

    assert created.status_code == 202 and added.status_code == 202
    assert created.json()["type"] == "UPLOAD" and created.json()["createRoute"] == "MESSAGING_API"
    assert before["audienceGroup"]["status"] == "IN_PROGRESS"
    assert [j["jobStatus"] for j in before["jobs"]] == ["WORKING", "WORKING"]
    assert (after["audienceGroup"]["status"], after["audienceGroup"]["audienceCount"]) == ("READY", 63)
    assert [j["jobStatus"] for j in after["jobs"]] == ["FINISHED", "FINISHED"]
    assert api.delete(f"/v2/bot/audienceGroup/{audience_id}").status_code == 200
    assert api.get(f"/v2/bot/audienceGroup/{audience_id}").json()["message"] == "audience group not found"


def test_an_upload_is_checked_against_the_documented_limits(api):
    long = api.post("/v2/bot/audienceGroup/upload", json={"description": "x" * 121, "audiences": []})
    many = api.post("/v2/bot/audienceGroup/upload", json={"description": "tag", "audiences": users(10_001)})

    assert long.status_code == 400 and many.status_code == 400


def test_a_narrowcast_is_accepted_with_202_and_its_progress_advances_over_time(api, fake):
    audience_id = ready_audience(api, fake, 60)

    answer = narrowcast(api, audience_id)
    request_id = answer.headers["x-line-request-id"]
    waiting = progress(api, request_id)
    fake.clock.now += 5
    sending = progress(api, request_id)
    fake.clock.now += 20
    done = progress(api, request_id)

    assert (answer.status_code, answer.json()) == (202, {})
    assert waiting["phase"] == "waiting" and waiting["acceptedTime"].endswith("Z")
    assert sending == {**waiting, "phase": "sending", "targetCount": 60}
    assert done["phase"] == "succeeded"
    assert (done["successCount"], done["failureCount"], done["targetCount"]) == (60, 0, 60)
    assert "completedTime" in done
    assert [r.path for r in fake.sent()] == ["/v2/bot/message/narrowcast"]


def test_an_audience_under_50_fails_later_with_error_code_4(api, fake):
    audience_id = ready_audience(api, fake, 49)

    request_id = narrowcast(api, audience_id).headers["x-line-request-id"]
    fake.clock.now += 5

    failed = progress(api, request_id)
    assert (failed["phase"], failed["errorCode"], failed["successCount"]) == ("failed", 4, 0)
    assert fake.total_usage == 0


def test_a_repeated_retry_key_is_answered_409_and_not_sent_again(api, fake):
    audience_id = ready_audience(api, fake, 60)
    key = str(uuid.uuid4())

    first = narrowcast(api, audience_id, key=key)
    again = narrowcast(api, audience_id, key=key)

    assert again.status_code == 409
    assert again.headers["x-line-accepted-request-id"] == first.headers["x-line-request-id"]
    assert len(fake.sent("narrowcast")) == 1
    assert fake.total_usage == 60


def test_partial_delivery_forbidden_over_the_quota_fails_with_error_code_5(api, fake):
    fake.set_quota(value=100, total_usage=80)
    audience_id = ready_audience(api, fake, 60)
    forbid = {"upToRemainingQuota": True, "forbidPartialDelivery": True}

    request_id = narrowcast(api, audience_id, limit=forbid).headers["x-line-request-id"]
    fake.clock.now += 5

    assert progress(api, request_id)["errorCode"] == 5
    assert fake.total_usage == 80


def test_up_to_the_remaining_quota_sends_to_what_is_left(api, fake):
    fake.set_quota(value=100, total_usage=80)
    audience_id = ready_audience(api, fake, 60)

    request_id = narrowcast(api, audience_id, limit={"upToRemainingQuota": True}).headers["x-line-request-id"]
    fake.clock.now += 25

    assert progress(api, request_id)["successCount"] == 20
    assert fake.total_usage == 100


@pytest.mark.parametrize(
    ("limit", "recipient"),
    [
        ({"forbidPartialDelivery": True}, None),  # only with upToRemainingQuota (the spec)
        ({"max": 0}, None),  # minimum 1
        (None, {"type": "audience", "audienceGroupId": 999}),  # unknown audience
    ],
)
def test_it_refuses_a_narrowcast_the_spec_does_not_allow(api, fake, limit, recipient):
    audience_id = ready_audience(api, fake, 60)
    body = {"messages": TEXT, "recipient": recipient or {"type": "audience", "audienceGroupId": audience_id}}
    if limit is not None:
        body["limit"] = limit

    assert api.post("/v2/bot/message/narrowcast", json=body).status_code == 400
    assert fake.sent() == []


def test_an_audience_not_ready_yet_cannot_be_sent_to(api, fake):
    created = api.post("/v2/bot/audienceGroup/upload", json={"description": "tag", "audiences": users(60)})

    assert narrowcast(api, created.json()["audienceGroupId"]).status_code == 400


def test_the_retry_key_is_refused_on_the_audience_endpoints(api):
    answer = api.post(
        "/v2/bot/audienceGroup/upload",
        json={"description": "tag", "audiences": users(60)},
        headers={"X-Line-Retry-Key": str(uuid.uuid4())},
    )

    assert answer.status_code == 400


def test_a_forced_failure_and_an_unknown_request(api, fake):
    fake.fail_narrowcast(1)
    audience_id = ready_audience(api, fake, 60)

    request_id = narrowcast(api, audience_id).headers["x-line-request-id"]
    fake.clock.now += 5

    assert progress(api, request_id)["errorCode"] == 1
    unknown = api.get("/v2/bot/message/progress/narrowcast", params={"requestId": "nope"})
    assert unknown.status_code == 404

"""The fake LINE Messaging API, exercised over real loopback HTTP as the client code will use it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from sandbox.line import (
    AUTH_FAILED,
    DEFAULT_MEMBER_COUNT,
    MAX_MESSAGES,
    MAX_MULTICAST_RECIPIENTS,
    RETRY_KEY_TTL,
    FakeLine,
)
from sandbox.line.records import QUOTING_TYPES
from tests.contracts.openapi import load_spec
from tests.helpers.waiting import eventually

TOKEN = "channel-token"
USER = "U" + "1" * 32
OTHER_USER = "U" + "2" * 32
GROUP = "C" + "a" * 32
ROOM = "R" + "c" * 32
PUSH = "/v2/bot/message/push"
MULTICAST = "/v2/bot/message/multicast"
REPLY = "/v2/bot/message/reply"
TEXT = {"type": "text", "text": "本日のお知らせです"}
# An answer held back "for ever": the test releases it (release_held), never waits it out.
HELD = 60.0


def _client(fake: FakeLine, *, token: str | None = TOKEN, timeout: float = 2) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # Plain http on loopback: verify=False only skips loading the CA bundle (~40 ms a client).
    return httpx.Client(base_url=fake.base_url, headers=headers, timeout=timeout, verify=False)


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine(channel_tokens={TOKEN}) as fake:
        yield fake


@pytest.fixture
def api(fake: FakeLine) -> Iterator[httpx.Client]:
    with _client(fake) as client:
        yield client


def _push(api: httpx.Client, *, key: str | None = None, to: str = USER, **extra) -> httpx.Response:
    headers = {"X-Line-Retry-Key": key} if key else {}
    return api.post(PUSH, json={"to": to, "messages": [TEXT], **extra}, headers=headers)


def _is_uuid(value: str) -> bool:
    return str(uuid.UUID(value)) == value


# --- auth, routing, recording --------------------------------------------------------------


def test_it_rejects_a_missing_or_unknown_token(fake: FakeLine) -> None:
    body = {"to": USER, "messages": [TEXT]}
    with _client(fake, token=None) as anonymous, _client(fake, token="nope") as stranger:
        missing = anonymous.post(PUSH, json=body)
        unknown = stranger.post(PUSH, json=body)

    for response in (missing, unknown):
        assert (response.status_code, response.json()) == (401, {"message": AUTH_FAILED})
        assert _is_uuid(response.headers["x-line-request-id"])
    assert fake.sent() == []


def test_it_accepts_any_token_when_none_is_configured() -> None:
    with FakeLine() as fake, _client(fake, token="any") as client:
        response = client.get("/v2/bot/message/quota")

    assert response.status_code == 200


def test_it_answers_404_to_an_unknown_path(api: httpx.Client) -> None:
    response = api.get("/v2/bot/nothing/here")

    assert (response.status_code, response.json()) == (404, {"message": "Not found"})
    assert _is_uuid(response.headers["x-line-request-id"])


def test_it_records_every_request(fake: FakeLine, api: httpx.Client) -> None:
    before = time.time()
    response = _push(api, notificationDisabled=True)
    api.get("/v2/bot/message/quota")

    push, quota = fake.requests
    assert (push.method, push.path, push.status, push.accepted) == ("POST", PUSH, 200, True)
    assert push.headers["authorization"] == f"Bearer {TOKEN}"
    assert push.body == {"to": USER, "messages": [TEXT], "notificationDisabled": True}
    assert push.request_id == response.headers["x-line-request-id"]
    assert push.response == response.json()
    assert before <= push.received_at <= quota.received_at <= time.time()
    assert (quota.body, quota.accepted) == (None, False)
    assert fake.sent() == [push]


# --- sends ---------------------------------------------------------------------------------


def test_it_pushes_and_answers_the_sent_messages(fake: FakeLine, api: httpx.Client) -> None:
    flex = {"type": "flex", "altText": "お知らせ", "contents": {"type": "bubble", "body": {}}}
    response = api.post(
        PUSH, json={"to": USER, "messages": [TEXT, flex], "customAggregationUnits": ["promo_1"]}
    )

    assert response.status_code == 200
    text_sent, flex_sent = response.json()["sentMessages"]
    assert text_sent["id"].isdigit() and text_sent["quoteToken"]
    assert flex_sent["id"].isdigit() and "quoteToken" not in flex_sent  # a flex message can't be quoted
    assert _is_uuid(response.headers["x-line-request-id"])
    assert [r.body["to"] for r in fake.sent("push")] == [USER]


def test_it_multicasts_and_answers_an_empty_object(fake: FakeLine, api: httpx.Client) -> None:
    response = api.post(MULTICAST, json={"to": [USER, OTHER_USER], "messages": [TEXT]})

    assert (response.status_code, response.json()) == (200, {})
    assert _is_uuid(response.headers["x-line-request-id"])
    assert len(fake.sent(MULTICAST)) == 1


def test_it_accepts_a_text_quoting_a_message_it_sent(fake: FakeLine, api: httpx.Client) -> None:
    token = _push(api, to=GROUP).json()["sentMessages"][0]["quoteToken"]
    quoting = {"type": "text", "text": "訂正: 10:00 からです", "quoteToken": token}

    response = api.post(PUSH, json={"to": GROUP, "messages": [quoting]})

    assert response.status_code == 200 and response.json()["sentMessages"][0]["quoteToken"] != token
    assert fake.sent("push")[-1].body["messages"] == [quoting]


def test_it_rejects_a_quote_token_it_did_not_issue_and_sends_nothing(
    fake: FakeLine, api: httpx.Client
) -> None:
    foreign = api.post(PUSH, json={"to": USER, "messages": [{**TEXT, "quoteToken": "not-issued"}]})
    not_text = api.post(PUSH, json={"to": USER, "messages": [{**TEXT, "quoteToken": 7}]})

    assert (foreign.status_code, foreign.json()) == (400, {"message": "The quote token is invalid"})
    assert not_text.status_code == 400
    assert not_text.json()["details"] == [
        {"message": "Must be a non-empty string", "property": "messages[0].quoteToken"}
    ]
    assert fake.sent("push") == []


def test_it_replies_once_per_reply_token(fake: FakeLine, api: httpx.Client) -> None:
    body = {"replyToken": "nHuyWiB7yP5Zw52FIkcQobQuGDXCTA", "messages": [TEXT]}

    first = api.post(REPLY, json=body)
    again = api.post(REPLY, json=body)

    assert first.status_code == 200
    assert first.json()["sentMessages"][0]["id"].isdigit()
    assert (again.status_code, again.json()) == (400, {"message": "Invalid reply token"})
    assert len(fake.sent("reply")) == 1


# --- retry keys ----------------------------------------------------------------------------


def test_it_answers_409_to_a_repeated_retry_key_and_sends_once(fake: FakeLine, api: httpx.Client) -> None:
    key = str(uuid.uuid4())

    first = _push(api, key=key)
    again = _push(api, key=key.upper())
    multicast_key = str(uuid.uuid4())
    api.post(MULTICAST, json={"to": [USER], "messages": [TEXT]}, headers={"X-Line-Retry-Key": multicast_key})
    multicast_again = api.post(
        MULTICAST, json={"to": [USER], "messages": [TEXT]}, headers={"X-Line-Retry-Key": multicast_key}
    )

    assert again.status_code == 409
    assert again.json() == {"message": "The retry key is already accepted", **first.json()}
    assert again.headers["x-line-accepted-request-id"] == first.headers["x-line-request-id"]
    assert again.headers["x-line-request-id"] != first.headers["x-line-request-id"]
    assert multicast_again.status_code == 409
    assert multicast_again.json() == {"message": "The retry key is already accepted"}
    assert [r.path for r in fake.sent()] == [PUSH, MULTICAST]
    assert fake.total_usage == 2


def test_it_accepts_a_retry_key_again_after_24_hours(fake: FakeLine, api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    assert _push(api, key=key).status_code == 200

    now = time.time()
    fake.clock = lambda: now + RETRY_KEY_TTL + 1

    assert _push(api, key=key).status_code == 200
    assert len(fake.sent()) == 2


def test_it_rejects_a_retry_key_that_is_not_a_uuid_or_on_reply(fake: FakeLine, api: httpx.Client) -> None:
    not_uuid = _push(api, key="retry-1")
    on_reply = api.post(
        REPLY,
        json={"replyToken": "token", "messages": [TEXT]},
        headers={"X-Line-Retry-Key": str(uuid.uuid4())},
    )

    assert not_uuid.status_code == on_reply.status_code == 400
    assert fake.sent() == []


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "prop"),
    [
        ({"to": USER}, "messages"),
        ({"to": USER, "messages": []}, "messages"),
        ({"to": USER, "messages": [TEXT] * (MAX_MESSAGES + 1)}, "messages"),
        ({"to": USER, "messages": [{"type": "text"}]}, "messages[0].text"),
        ({"to": USER, "messages": [{"type": "text", "text": "あ" * 5001}]}, "messages[0].text"),
        (
            {"to": USER, "messages": [{"type": "image", "originalContentUrl": "http://example.com/a.jpg"}]},
            "messages[0].originalContentUrl",
        ),
        ({"to": USER, "messages": [TEXT, {"type": "carousel"}]}, "messages[1].type"),
        ({"to": USER, "messages": [{"type": "flex", "contents": {"type": "bubble"}}]}, "messages[0].altText"),
        ({"to": USER, "messages": [{"type": "template", "altText": "x"}]}, "messages[0].template"),
        ({"to": 123, "messages": [TEXT]}, "to"),
        ({"to": USER, "messages": [TEXT], "customAggregationUnits": ["a-b"]}, "customAggregationUnits[0]"),
    ],
)
def test_it_rejects_a_bad_push_body_with_details(
    fake: FakeLine, api: httpx.Client, body: dict, prop: str
) -> None:
    response = api.post(PUSH, json=body)

    assert response.status_code == 400
    payload = response.json()
    assert prop in [detail["property"] for detail in payload["details"]]
    assert payload["message"] == f"The request body has {len(payload['details'])} error(s)"
    assert all(detail["message"] for detail in payload["details"])
    assert fake.sent() == []


def test_it_counts_every_error_of_a_body(api: httpx.Client) -> None:
    body = {"to": USER, "messages": [{"type": "text", "text": ""}, {"type": "sticker", "packageId": "446"}]}

    response = api.post(PUSH, json=body)

    assert response.json() == {
        "message": "The request body has 2 error(s)",
        "details": [
            {"message": "May not be empty", "property": "messages[0].text"},
            {"message": "May not be empty", "property": "messages[1].stickerId"},
        ],
    }


@pytest.mark.parametrize("recipients", [[], [USER] * (MAX_MULTICAST_RECIPIENTS + 1)])
def test_it_rejects_a_multicast_to_no_one_or_more_than_500(api: httpx.Client, recipients: list[str]) -> None:
    response = api.post(MULTICAST, json={"to": recipients, "messages": [TEXT]})

    assert response.status_code == 400
    assert response.json()["details"] == [{"message": "Size must be between 1 and 500", "property": "to"}]


def test_it_accepts_a_multicast_to_exactly_500(fake: FakeLine, api: httpx.Client) -> None:
    response = api.post(MULTICAST, json={"to": [USER] * MAX_MULTICAST_RECIPIENTS, "messages": [TEXT]})

    assert response.status_code == 200
    assert fake.total_usage == MAX_MULTICAST_RECIPIENTS


def test_it_rejects_a_recipient_that_is_not_a_line_id(api: httpx.Client) -> None:
    invalid = "The property, 'to', in the request body is invalid"

    for response in (
        _push(api, to="someone@example.com"),
        api.post(MULTICAST, json={"to": [USER, GROUP], "messages": [TEXT]}),  # multicast: users only
    ):
        assert (response.status_code, response.json()) == (400, {"message": invalid})


def test_it_rejects_a_body_that_is_not_json(api: httpx.Client) -> None:
    response = api.post(PUSH, content=b"{nope", headers={"Content-Type": "application/json"})

    assert response.status_code == 400
    assert response.json()["message"]


# --- injected faults -----------------------------------------------------------------------


def test_it_injects_a_500_and_sends_nothing(fake: FakeLine, api: httpx.Client) -> None:
    fake.fail_next(500, path_prefix=PUSH)
    key = str(uuid.uuid4())

    failed = _push(api, key=key)
    retried = _push(api, key=key)

    assert failed.status_code == 500
    assert _is_uuid(failed.headers["x-line-request-id"])
    assert retried.status_code == 200
    assert [r.request_id for r in fake.sent()] == [retried.headers["x-line-request-id"]]


def test_it_injects_a_429_with_retry_after_after_auth_only_under_the_prefix(
    fake: FakeLine, api: httpx.Client
) -> None:
    fake.fail_next(429, count=2, path_prefix=PUSH, headers={"Retry-After": "7"})

    with _client(fake, token=None) as anonymous:
        unauthenticated = anonymous.post(PUSH, json={"to": USER, "messages": [TEXT]})
    other_path = api.get("/v2/bot/message/quota")
    limited = [_push(api), _push(api)]
    served = _push(api)

    assert unauthenticated.status_code == 401
    assert other_path.status_code == 200
    for response in limited:
        assert response.status_code == 429
        assert response.json() == {"message": "The API rate limit has been exceeded. Try again later."}
        assert response.headers["Retry-After"] == "7"
    assert served.status_code == 200
    assert len(fake.sent()) == 1


def test_it_sends_after_a_delay_that_times_the_client_out(fake: FakeLine) -> None:
    fake.fail_next(0, delay=HELD)
    key = str(uuid.uuid4())
    with _client(fake, timeout=0.05) as impatient, pytest.raises(httpx.TimeoutException):
        _push(impatient, key=key)
    assert fake.sent() == [] and fake.held == 1  # still waiting

    with _client(fake) as api:
        retried = _push(api, key=key)  # overtakes the waiting original
    fake.release_held()

    eventually(lambda: len(fake.requests) == 2, "both requests answered")
    assert retried.status_code == 200
    assert fake.requests[1].status == 409  # the original, served late, hit the accepted key
    assert len(fake.sent()) == 1


def test_it_accepts_a_send_whose_answer_is_lost(fake: FakeLine, api: httpx.Client) -> None:
    fake.fail_next(500, path_prefix=PUSH, then_accept=True)
    key = str(uuid.uuid4())

    lost = _push(api, key=key)
    retried = _push(api, key=key)

    assert lost.status_code == 500
    assert retried.status_code == 409
    assert retried.headers["x-line-accepted-request-id"] == lost.headers["x-line-request-id"]
    (sent,) = fake.sent()
    assert (sent.request_id, sent.status) == (lost.headers["x-line-request-id"], 500)
    assert fake.total_usage == 1


def test_it_accepts_before_a_delay_that_times_the_client_out(fake: FakeLine) -> None:
    fake.fail_next(0, delay=HELD, then_accept=True)
    key = str(uuid.uuid4())
    with _client(fake, timeout=0.05) as impatient, pytest.raises(httpx.TimeoutException):
        _push(impatient, key=key)
    with _client(fake) as api:
        retried = _push(api, key=key)
    fake.release_held()

    assert retried.status_code == 409
    eventually(
        lambda: len(fake.requests) == 2, "both requests answered"
    )  # a request is recorded once it is answered
    (sent,) = fake.sent()
    assert retried.headers["x-line-accepted-request-id"] == sent.request_id
    assert sent.status == 200


def _outcomes(api: httpx.Client, n: int) -> list[int]:
    return [_push(api, to=f"C{i:032x}").status_code for i in range(n)]


def test_it_fails_a_seeded_share_of_pushes_the_same_way_on_every_run() -> None:
    runs = []
    for _ in range(2):
        with FakeLine(channel_tokens={TOKEN}) as fake, _client(fake) as api:
            fake.set_chaos(fail_rate=0.3, seed=7)
            statuses = _outcomes(api, 60)
            other = api.get("/v2/bot/message/quota")  # not under the prefix: never failed
            runs.append((statuses, fake.chaos_counts(), len(fake.sent()), other.status_code))

    (statuses, counts, sent, other), again = runs
    assert again == runs[0]
    assert set(statuses) == {200, 500}
    assert counts == {"ok": statuses.count(200), "fail": statuses.count(500), "hang": 0}
    assert 8 <= counts["fail"] <= 30  # about 30 % of 60
    assert sent == counts["ok"]  # a failed push sent nothing
    assert other == 200


def test_it_accepts_a_hung_push_at_once_and_answers_it_late(fake: FakeLine) -> None:
    fake.set_chaos(hang_rate=1.0, hang_seconds=HELD, seed=1)
    key = str(uuid.uuid4())
    with _client(fake, timeout=0.05) as impatient, pytest.raises(httpx.TimeoutException):
        _push(impatient, key=key)

    (sent,) = fake.sent()  # recorded at acceptance, while its answer is still held back
    assert fake.held == 1
    assert sent.status == 200
    with _client(fake, timeout=2) as api:
        fake.set_chaos()  # no more faults: the resend is answered at once
        resent = _push(api, key=key)
    assert resent.status_code == 409
    assert resent.headers["x-line-accepted-request-id"] == sent.request_id
    assert len(fake.sent()) == 1


def test_it_answers_every_push_after_its_latency_once_it_took_it(fake: FakeLine) -> None:
    fake.set_chaos(latency_seconds=HELD, seed=1)
    with _client(fake, timeout=0.05) as impatient, pytest.raises(httpx.TimeoutException):
        _push(impatient)
    (sent,) = fake.sent()  # taken before the answer, which is still on its way
    assert sent.status == 200 and fake.held == 1
    assert fake.chaos_counts() == {"ok": 1, "fail": 0, "hang": 0}


def test_it_refuses_chaos_shares_that_are_not_shares(fake: FakeLine) -> None:
    with pytest.raises(ValueError):
        fake.set_chaos(fail_rate=0.7, hang_rate=0.4)
    with pytest.raises(ValueError):
        fake.set_chaos(hang_rate=0.1, hang_seconds=-1)
    with pytest.raises(ValueError):
        fake.set_chaos(latency_seconds=-0.1)


def test_it_forgets_the_chaos_on_reset(fake: FakeLine, api: httpx.Client) -> None:
    fake.set_chaos(fail_rate=1.0)
    assert _push(api).status_code == 500

    fake.reset()

    assert _push(api).status_code == 200
    assert fake.chaos_counts() == {}


# --- quota, groups, profiles, statistics ---------------------------------------------------


def test_it_counts_quota_per_recipient(fake: FakeLine, api: httpx.Client) -> None:
    fake.add_group(GROUP, member_count=12)
    fake.set_quota(value=1000, total_usage=10)

    _push(api)  # a user: 1
    api.post(PUSH, json={"to": GROUP, "messages": [TEXT, TEXT, TEXT]})  # a group: its members
    api.post(MULTICAST, json={"to": [USER, OTHER_USER], "messages": [TEXT]})  # 2
    api.post(REPLY, json={"replyToken": "r", "messages": [TEXT]})  # replies are free

    assert api.get("/v2/bot/message/quota").json() == {"type": "limited", "value": 1000}
    assert api.get("/v2/bot/message/quota/consumption").json() == {"totalUsage": 10 + 1 + 12 + 2}


def test_it_has_no_target_limit_until_one_is_set(api: httpx.Client) -> None:
    assert api.get("/v2/bot/message/quota").json() == {"type": "none"}
    assert api.get("/v2/bot/message/quota/consumption").json() == {"totalUsage": 0}


def test_it_answers_429_and_sends_nothing_past_the_monthly_limit(fake: FakeLine, api: httpx.Client) -> None:
    fake.set_quota(value=2, total_usage=1)

    within = _push(api)
    over = _push(api)

    assert within.status_code == 200
    assert (over.status_code, over.json()) == (429, {"message": "You have reached your monthly limit."})
    assert len(fake.sent()) == 1
    assert api.get("/v2/bot/message/quota/consumption").json() == {"totalUsage": 2}


def test_it_answers_a_group_summary_and_member_count(fake: FakeLine, api: httpx.Client) -> None:
    fake.add_group(GROUP, name="出演者連絡", member_count=8)

    summary = api.get(f"/v2/bot/group/{GROUP}/summary").json()
    count = api.get(f"/v2/bot/group/{GROUP}/members/count").json()
    unknown = "C" + "b" * 32

    assert summary == {"groupId": GROUP, "groupName": "出演者連絡", "pictureUrl": summary["pictureUrl"]}
    assert summary["pictureUrl"].startswith("https://")
    assert count == {"count": 8}
    assert api.get(f"/v2/bot/group/{unknown}/summary").status_code == 404
    assert api.get(f"/v2/bot/group/{unknown}/members/count").status_code == 404


def test_it_answers_a_rooms_member_count_and_charges_a_push_by_it(fake: FakeLine, api: httpx.Client) -> None:
    room, unknown = "R" + "a" * 32, "R" + "b" * 32
    fake.add_room(room, member_count=6)

    count = api.get(f"/v2/bot/room/{room}/members/count")
    api.post(PUSH, json={"to": room, "messages": [TEXT]})

    assert (count.status_code, count.json()) == (200, {"count": 6})
    assert api.get(f"/v2/bot/room/{unknown}/members/count").status_code == 404
    assert api.get("/v2/bot/message/quota/consumption").json() == {"totalUsage": 6}
    with pytest.raises(ValueError):
        fake.add_room("C" + "a" * 32)


def test_it_pushes_to_unregistered_groups_only_while_none_is_registered(
    fake: FakeLine, api: httpx.Client
) -> None:
    unknown = "C" + "b" * 32

    assert _push(api, to=unknown).status_code == 200
    assert fake.total_usage == DEFAULT_MEMBER_COUNT
    fake.add_group(GROUP)
    assert _push(api, to=unknown).status_code == 400
    assert _push(api, to=GROUP).status_code == 200


def test_it_answers_a_profile(api: httpx.Client) -> None:
    profile = api.get(f"/v2/bot/profile/{USER}").json()

    assert profile["userId"] == USER
    assert profile["displayName"] == "LINE ユーザー"
    assert profile["language"] == "ja"
    assert profile["pictureUrl"].startswith("https://")


def test_it_answers_per_unit_statistics(fake: FakeLine, api: httpx.Client) -> None:
    fake.set_unit_stats("promo_1", {"uniqueImpression": 40, "uniqueClick": 30})
    path = "/v2/bot/insight/message/event/aggregation"
    period = {"from": "20260501", "to": "20260531"}

    known = api.get(path, params={"customAggregationUnit": "promo_1", **period}).json()
    unknown = api.get(path, params={"customAggregationUnit": "other", **period}).json()
    too_long = api.get(
        path, params={"customAggregationUnit": "promo_1", "from": "20260501", "to": "20260601"}
    )

    assert known == {
        "overview": {
            "uniqueImpression": 40,
            "uniqueClick": 30,
            "uniqueMediaPlayed": None,
            "uniqueMediaPlayed100Percent": None,
        },
        "messages": [],
        "clicks": [],
    }
    assert set(unknown["overview"].values()) == {None}
    assert too_long.status_code == 400


def test_it_counts_the_aggregation_units_used(api: httpx.Client) -> None:
    _push(api, customAggregationUnits=["promo_1"])
    _push(api, customAggregationUnits=["promo_1"])
    api.post(MULTICAST, json={"to": [USER], "messages": [TEXT], "customAggregationUnits": ["promo_2"]})

    assert api.get("/v2/bot/message/aggregation/info").json() == {"numOfCustomAggregationUnits": 2}


def test_it_forgets_everything_on_reset(fake: FakeLine, api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    fake.add_group(GROUP)
    fake.set_quota(value=10)
    _push(api, key=key)
    fake.fail_next(500)

    fake.reset()

    assert fake.requests == [] and fake.total_usage == 0
    assert _push(api, key=key).status_code == 200
    assert api.get(f"/v2/bot/group/{GROUP}/summary").status_code == 404
    assert api.get("/v2/bot/message/quota").json() == {"type": "none"}


# --- throughput, spec agreement, stand-alone -------------------------------------------------


def test_it_serves_300_pushes_over_one_keep_alive_connection(fake: FakeLine, api: httpx.Client) -> None:
    statuses = {_push(api, key=str(uuid.uuid4())).status_code for _ in range(300)}

    assert statuses == {200}
    assert len(fake.sent()) == 300
    assert len({r.request_id for r in fake.requests}) == 300


@pytest.mark.contract
def test_it_agrees_with_the_openapi_spec(fake: FakeLine, api: httpx.Client) -> None:
    spec = load_spec("messaging-api.yml")
    schemas = spec["components"]["schemas"]
    fields = {name: set(schema.get("properties", {})) for name, schema in schemas.items()}

    # The retry key is a parameter of exactly the sends the fake honours it on.
    with_key = {
        path
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if method in ("get", "post", "put", "delete")
        and any(p.get("name") == "X-Line-Retry-Key" for p in operation.get("parameters", []))
    }
    assert with_key & {PUSH, MULTICAST, REPLY} == {PUSH, MULTICAST}

    # List limits.
    assert schemas["MulticastRequest"]["properties"]["to"]["maxItems"] == MAX_MULTICAST_RECIPIENTS
    for name in ("PushMessageRequest", "MulticastRequest", "ReplyMessageRequest"):
        assert schemas[name]["properties"]["messages"]["maxItems"] == MAX_MESSAGES

    # Response shapes: 200 and 409 of a push, with the ErrorResponse / ErrorDetail fields.
    key = str(uuid.uuid4())
    ok = _push(api, key=key).json()
    conflict = _push(api, key=key).json()
    bad = api.post(PUSH, json={"to": USER, "messages": []}).json()
    assert set(schemas["PushMessageResponse"]["required"]) <= set(ok) <= fields["PushMessageResponse"]
    assert set(ok["sentMessages"][0]) <= fields["SentMessage"]
    assert set(schemas["ErrorResponse"]["required"]) <= set(conflict) <= fields["ErrorResponse"]
    assert set(bad) <= fields["ErrorResponse"]
    assert set(bad["details"][0]) <= fields["ErrorDetail"]

    # The message types that may quote are exactly those whose schema has quoteToken.
    quoting = {
        kind
        for kind, ref in schemas["Message"]["discriminator"]["mapping"].items()
        if any(
            "quoteToken" in part.get("properties", {})
            for part in schemas[ref.rsplit("/", 1)[1]].get("allOf", [])
        )
    }
    assert quoting == QUOTING_TYPES

    # Every message type of the discriminator is known, and missing required fields are reported.
    mapping = schemas["Message"]["discriminator"]["mapping"]
    for kind, ref in mapping.items():
        required = schemas[ref.rsplit("/", 1)[1]].get("required", [])
        response = api.post("/v2/bot/message/validate/push", json={"messages": [{"type": kind}]})
        reported = {d["property"] for d in response.json().get("details", [])}
        assert reported == {f"messages[0].{name}" for name in required}, kind

    # Read endpoints carry their schema's required fields and nothing unknown.
    fake.add_group(GROUP)
    fake.add_room(ROOM)
    reads = {
        "/v2/bot/message/quota": "MessageQuotaResponse",
        "/v2/bot/message/quota/consumption": "QuotaConsumptionResponse",
        "/v2/bot/message/aggregation/info": "GetAggregationUnitUsageResponse",
        f"/v2/bot/group/{GROUP}/summary": "GroupSummaryResponse",
        f"/v2/bot/group/{GROUP}/members/count": "GroupMemberCountResponse",
        f"/v2/bot/room/{ROOM}/members/count": "RoomMemberCountResponse",
        f"/v2/bot/profile/{USER}": "UserProfileResponse",
    }
    for path, schema in reads.items():
        body = api.get(path).json()
        assert set(schemas[schema].get("required", [])) <= set(body) <= fields[schema], path


@pytest.mark.contract
def test_it_agrees_with_the_insight_spec(fake: FakeLine, api: httpx.Client) -> None:
    schemas = load_spec("insight.yml")["components"]["schemas"]
    params = {"customAggregationUnit": "promo_1", "from": "20260501", "to": "20260502"}

    body = api.get("/v2/bot/insight/message/event/aggregation", params=params).json()

    assert set(body) == set(schemas["GetStatisticsPerUnitResponse"]["required"])
    assert set(body["overview"]) == set(schemas["GetStatisticsPerUnitResponseOverview"]["properties"])


def test_it_runs_standalone_and_stops_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox.line", "--port", "0", "--token", TOKEN],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        match = re.search(r"fake LINE at (http://\S+)/", process.stderr.readline())
        assert match is not None
        response = httpx.get(
            f"{match.group(1)}/v2/bot/message/quota",
            headers={"Authorization": f"Bearer {TOKEN}"},
            verify=False,
        )
        assert response.json() == {"type": "none"}

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

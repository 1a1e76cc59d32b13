"""Each event of a signed LINE body is stored on its own: an odd one (a shape automedia
cannot act on, or text and nesting no column can hold) is stored `rejected` with the
reason, and the valid events beside it are processed as usual; the answer is 200. Only a
body that is not a callback at all is refused whole."""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest
from django.db import DataError
from django.urls import reverse
from django_q.conf import Conf
from django_q.models import OrmQ
from prometheus_client import REGISTRY

from core import intake as intake_module
from core.intake import EventIntake
from line.events import LINE_EVENTS
from line.models import LineContact, LineSurveyRule, LineWebhookEvent
from tests.helpers.linepush import USER, deliver, fixture, shop

pytestmark = pytest.mark.django_db

ODD_ID = "01JF00000000000000000000FF"
PLACEHOLDER = "Uxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"  # as LINE's own SDK samples write a user id


def deep(levels: int) -> object:
    value: object = "end"
    for _ in range(levels):
        value = [value]
    return value


# An odd event whose payload is stored with it: (change to a valid message event, reason).
ODD_SHAPES = {
    "user-id-a-placeholder": (
        lambda e: e | {"source": {"type": "user", "userId": PLACEHOLDER}},
        "`source.userId`",
    ),
    "user-id-a-path": (
        lambda e: e | {"source": {"type": "user", "userId": "../../bot/info"}},
        "`source.userId`",
    ),
    "group-id-a-number": (lambda e: e | {"source": {"type": "group", "groupId": 5}}, "`source.groupId`"),
    "room-id-upper-hex": (
        lambda e: e | {"source": {"type": "room", "roomId": "R" + "F" * 32}},
        "`source.roomId`",
    ),
    "type-a-number": (lambda e: e | {"type": 5}, "`type`"),
    "future-message-text-an-object": (
        lambda e: e | {"message": {"id": "1", "type": "sticker2", "text": {"rich": ["a"]}}},
        "`message.text`",
    ),
    "message-a-string": (lambda e: e | {"message": "hello"}, "`message`"),
    "timestamp-true": (lambda e: e | {"timestamp": True}, "`timestamp`"),
    "joined-a-list": (lambda e: e | {"joined": [1]}, "`joined`"),
    "reply-token-an-object": (lambda e: e | {"replyToken": {}}, "`replyToken`"),
}


def odd_message(change) -> dict:
    return change(fixture("message_text")["events"][0] | {"webhookEventId": ODD_ID})


def mixed_body(odd: object) -> dict:
    follow, message = fixture("follow")["events"][0], fixture("message_text")["events"][0]
    return {"destination": "U" + "b" * 32, "events": [follow, odd, message]}


@pytest.fixture
def tenant(db):
    tenant = shop()
    LineSurveyRule.objects.create(tenant=tenant, name="参加", pattern="参加します", add_tags=["shoot_yes"])
    return tenant


def assert_the_valid_events_were_processed():
    done = LineWebhookEvent.objects.filter(outcome="done").values_list("type", flat=True)
    assert sorted(done) == ["follow", "message"]
    assert LineContact.objects.get(user_id=USER).tags == ["shoot_yes"]


def test_it_stores_a_mixed_body_event_by_event_and_answers_200(client, tenant, line):
    odd = odd_message(ODD_SHAPES["user-id-a-placeholder"][0])

    with mock.patch("django_q.tasks.async_task", wraps=__import__("django_q.tasks").tasks.async_task) as task:
        response = deliver(client, mixed_body(odd))

    assert response.status_code == 200
    assert response.json() == {
        "accepted": 2,
        "duplicate": 0,
        "rejected": 1,
        "reasons": ["events[1]: `source.userId` is not a LINE id"],
    }
    assert_the_valid_events_were_processed()
    rejected = LineWebhookEvent.objects.get(webhook_event_id=ODD_ID)
    assert (rejected.outcome, rejected.detail, rejected.payload) == (
        "rejected",
        "`source.userId` is not a LINE id",
        odd,
    )
    assert rejected.processed_at is not None and rejected.attempts == 0
    task.assert_called_once_with("line.tasks.process_line_events")  # one drain for the body
    assert line.requests and all(PLACEHOLDER not in r.path for r in line.requests)


@pytest.mark.parametrize("case", list(ODD_SHAPES))
def test_it_stores_an_odd_event_rejected_with_its_reason_and_payload(client, tenant, line, case):
    change, reason = ODD_SHAPES[case]
    odd = odd_message(change)

    response = deliver(client, mixed_body(odd))

    assert response.status_code == 200 and response.json()["rejected"] == 1
    rejected = LineWebhookEvent.objects.get(outcome="rejected")
    assert reason in rejected.detail and response.json()["reasons"] == [f"events[1]: {rejected.detail}"]
    assert rejected.payload == odd and rejected.webhook_event_id == ODD_ID
    assert_the_valid_events_were_processed()


def test_it_keeps_a_type_longer_than_its_column_cut_to_the_column(client, tenant, line):
    odd = odd_message(lambda e: e | {"type": "messageReactionAddedToAThreadReply"})

    deliver(client, mixed_body(odd))

    rejected = LineWebhookEvent.objects.get(outcome="rejected")
    assert rejected.type == "messageReactionAddedToAThreadRep"  # 32 characters
    assert "`type` must be a string of 1 to 32 characters" in rejected.detail
    assert rejected.payload == odd
    assert_the_valid_events_were_processed()


def test_it_stores_an_event_id_longer_than_its_column_under_an_id_of_its_bytes(client, tenant, line):
    odd = odd_message(lambda e: e | {"webhookEventId": "0" * 65})

    deliver(client, mixed_body(odd))
    again = deliver(client, mixed_body(odd))

    rejected = LineWebhookEvent.objects.get(outcome="rejected")
    assert rejected.webhook_event_id.startswith("sha256:") and len(rejected.webhook_event_id) == 64
    assert "`webhookEventId`" in rejected.detail
    assert again.json() == {"accepted": 0, "duplicate": 3, "rejected": 0}


DERIVED_ID = re.compile(r"sha256:[0-9a-f]{57}")  # the column holds 64 characters


# An odd event no column can hold: stored by its id (None: it has no usable one, so by the
# digest of its bytes) and the reason, without its payload.
UNSTORABLE = {
    "nul-in-text": (lambda e: e | {"message": {"type": "text", "text": "a\x00b"}}, ODD_ID, "NUL"),
    "lone-surrogate-in-a-key": (lambda e: e | {"\ud800": 1}, ODD_ID, "lone surrogate"),
    "nul-in-the-event-id": (lambda e: e | {"webhookEventId": "a\x00"}, None, "NUL"),
    "nested-40-levels": (lambda e: e | {"postback": {"data": deep(40)}}, ODD_ID, "nested deeper than 32"),
    # deeper than Python's parser recurses: the raw body gets it in place of DEEPEST
    "nested-5000-levels": (lambda e: e | {"postback": {"data": "DEEPEST"}}, ODD_ID, "nested deeper than 32"),
    "not-an-object": (lambda e: "follow", None, "event must be an object"),
    "a-list": (lambda e: [e], None, "event must be an object"),
}


@pytest.mark.parametrize("case", list(UNSTORABLE))
def test_it_records_an_event_no_column_can_hold_by_id_and_reason_only(client, tenant, line, case):
    change, event_id, reason = UNSTORABLE[case]
    odd = odd_message(change)
    raw = json.dumps(mixed_body(odd)).encode()  # ASCII: \ud800 travels escaped
    raw = raw.replace(b'"DEEPEST"', b"[" * 5000 + b"]" * 5000)

    response = deliver(client, raw)

    assert response.status_code == 200 and response.json()["rejected"] == 1
    rejected = LineWebhookEvent.objects.get(outcome="rejected")
    assert rejected.payload == {} and rejected.detail.startswith("payload not stored: ")
    assert reason in rejected.detail
    if event_id is not None:
        assert rejected.webhook_event_id == event_id
    else:  # no usable id: one derived from the event's bytes, the same for a redelivery
        assert DERIVED_ID.fullmatch(rejected.webhook_event_id)
        assert deliver(client, raw).json() == {"accepted": 0, "duplicate": 3, "rejected": 0}
    assert_the_valid_events_were_processed()


def test_events_without_a_usable_id_are_told_apart_by_their_bytes(client, tenant):
    events = ["follow", "unfollow", {"type": "follow"}, {"type": "unfollow"}]

    response = deliver(client, {"destination": "U" + "b" * 32, "events": events})

    assert response.json()["accepted"] == response.json()["rejected"] == 2
    ids = set(LineWebhookEvent.objects.values_list("webhook_event_id", flat=True))
    assert len(ids) == 4 and all(DERIVED_ID.fullmatch(i) for i in ids)


def test_it_records_an_event_the_database_refuses_by_id_and_reason_only(client, tenant, line):
    odd = odd_message(lambda e: e)
    insert = intake_module.row_insert_new

    def refuse_its_payload(row, **kwargs):
        if row.webhook_event_id == ODD_ID and row.payload:
            raise DataError("value too long for type character varying(32)\nDETAIL: …")
        return insert(row, **kwargs)

    with mock.patch.object(intake_module, "row_insert_new", refuse_its_payload):
        response = deliver(client, mixed_body(odd))

    assert response.status_code == 200 and response.json()["rejected"] == 1
    rejected = LineWebhookEvent.objects.get(webhook_event_id=ODD_ID)
    assert (rejected.outcome, rejected.payload) == ("rejected", {})
    assert rejected.detail == "payload not stored: value too long for type character varying(32)"


def test_an_odd_event_is_counted_in_metrics_and_shown_in_the_admin(
    client, admin_client, tenant, line, django_capture_on_commit_callbacks, settings
):
    settings.METRICS_PUBLIC = True
    labels = {"source": "line", "result": "rejected"}
    before = REGISTRY.get_sample_value("automedia_webhook_events_received_total", labels) or 0
    odd = odd_message(ODD_SHAPES["future-message-text-an-object"][0])

    with django_capture_on_commit_callbacks(execute=True):
        deliver(client, mixed_body(odd))

    assert REGISTRY.get_sample_value("automedia_webhook_events_received_total", labels) == before + 1
    assert 'automedia_webhook_events_received_total{result="rejected",source="line"}' in (
        client.get("/metrics").content.decode()
    )
    page = admin_client.get(reverse("admin:line_linewebhookevent_changelist"), {"outcome": "rejected"})
    assert "`message.type` and `message.text` must be strings" in page.content.decode()


@pytest.mark.parametrize(
    "raw",
    [
        b'{"events": [], "x": "\\ud800", "y": "\\u0000"}',
        b'{"events": [], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    ],
    ids=["odd-text", "nested-5000-levels"],
)
def test_it_answers_200_to_oddities_outside_the_events_and_stores_nothing(client, tenant, raw):
    response = deliver(client, raw)

    assert response.status_code == 200 and response.json() == {"accepted": 0, "duplicate": 0, "rejected": 0}
    assert not LineWebhookEvent.objects.exists()


@pytest.mark.parametrize(
    "raw",
    [b'{"events": ["\xff"]}', b"[]", b'{"events": {}}', b'{"events": [], "x": NaN}', b'{"events": ['],
    ids=["invalid-utf8", "not-an-object", "events-not-a-list", "nan", "not-json"],
)
def test_it_refuses_a_body_that_is_not_a_callback_whole(client, tenant, raw):
    response = deliver(client, raw)

    assert response.status_code == 400
    assert not LineWebhookEvent.objects.exists()


def test_it_refuses_an_unsigned_body_whole(client, tenant):
    response = deliver(client, mixed_body(odd_message(lambda e: e)), signature="")

    assert response.status_code == 401
    assert not LineWebhookEvent.objects.exists()


def test_one_body_stores_at_most_its_cap_of_events_and_lists_a_bounded_answer(client, tenant, settings):
    """A signed body of 17 KB once stored 3,000 rows: the rest past the cap are not stored."""
    settings.LINE_WEBHOOK_MAX_EVENTS = 100
    odd = [{"type": n} for n in range(3000)]  # tiny and odd: each one a reason
    body = {"destination": "U" + "b" * 32, "events": odd}

    response = deliver(client, body)

    answer = response.json()
    assert response.status_code == 200 and LineWebhookEvent.objects.count() == 100
    assert (answer["rejected"], answer["not_stored"]) == (100, 2900)
    assert len(answer["reasons"]) == 20 and answer["reasons"][-1] == "… and 82 more"
    assert len(response.content) < 4000


def test_the_cap_says_which_events_were_not_stored(client, tenant, settings, line):
    settings.LINE_WEBHOOK_MAX_EVENTS = 1
    follow, message = fixture("follow")["events"][0], fixture("message_text")["events"][0]

    answer = deliver(client, {"destination": "U" + "b" * 32, "events": [follow, message]}).json()

    assert answer == {
        "accepted": 1,
        "duplicate": 0,
        "rejected": 0,
        "not_stored": 1,
        "reasons": ["events[1:]: not stored: one body holds at most 1 events"],
    }
    assert list(LineWebhookEvent.objects.values_list("type", flat=True)) == ["follow"]


def follows(count: int) -> dict:
    events = [
        fixture("follow")["events"][0] | {"webhookEventId": f"01JF00000000000000000000{n:02d}"}
        for n in range(count)
    ]
    return {"destination": "U" + "b" * 32, "events": events}


def test_a_body_is_stored_through_the_shared_intake_and_enqueues_one_drain_after_its_commit(
    client, tenant, settings, django_capture_on_commit_callbacks
):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    store = mock.patch.object(EventIntake, "store", autospec=True, side_effect=EventIntake.store)

    with store as stored, mock.patch("django_q.tasks.async_task") as task:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            response = deliver(client, follows(3))
        assert task.call_count == 0  # nothing reaches Redis before the events commit
        for callback in callbacks:
            callback()

    assert response.json() == {"accepted": 3, "duplicate": 0, "rejected": 0}
    assert [call.args[0] for call in stored.call_args_list] == [LINE_EVENTS] * 3
    task.assert_called_once_with("line.tasks.process_line_events")


def test_with_the_orm_broker_a_body_writes_one_task_row_with_its_events(client, tenant, monkeypatch):
    monkeypatch.setattr(Conf, "SYNC", False)  # a real enqueue into the ORM broker

    deliver(client, follows(3))

    assert LineWebhookEvent.objects.filter(outcome="pending").count() == 3
    assert [row.func() for row in OrmQ.objects.all()] == ["line.tasks.process_line_events"]


def test_an_event_twice_in_one_body_is_stored_once(client, tenant, line):
    body = follows(1)
    body["events"] *= 2

    response = deliver(client, body)

    assert response.json() == {"accepted": 1, "duplicate": 1, "rejected": 0}
    assert LineWebhookEvent.objects.get().outcome == "done"

"""The LINE receiver checks the shape of every event before it stores any: one event of the
wrong shape makes the signed body a 400 with the reason (which event, which field)."""

from __future__ import annotations

import json

import pytest

from linepush.models import LineWebhookEvent
from tests.helpers.linepush import deliver, fixture, shop

pytestmark = pytest.mark.django_db

WRONG_SHAPES = {
    "not-an-object": (lambda e: "follow", "event must be an object"),
    "type-a-number": (lambda e: e | {"type": 5}, "`type`"),
    "type-too-long": (lambda e: e | {"type": "x" * 33}, "`type`"),
    "event-id-a-number": (lambda e: e | {"webhookEventId": 7}, "`webhookEventId`"),
    "event-id-too-long": (lambda e: e | {"webhookEventId": "0" * 65}, "`webhookEventId`"),
    "source-text": (lambda e: e | {"source": "user"}, "`source`"),
    "user-id-a-path": (
        lambda e: e | {"source": {"type": "user", "userId": "../../bot/info"}},
        "`source.userId`",
    ),
    "user-id-too-long": (
        lambda e: e | {"source": {"type": "user", "userId": "U" + "0" * 70}},
        "`source.userId`",
    ),
    "group-id-a-number": (lambda e: e | {"source": {"type": "group", "groupId": 5}}, "`source.groupId`"),
    "timestamp-true": (lambda e: e | {"timestamp": True}, "`timestamp`"),
    "message-text": (lambda e: e | {"message": "hello"}, "`message`"),
    "message-text-a-list": (lambda e: e | {"message": {"type": "text", "text": ["a"]}}, "`message.type`"),
    "joined-a-list": (lambda e: e | {"joined": [1]}, "`joined`"),
    "reply-token-an-object": (lambda e: e | {"replyToken": {}}, "`replyToken`"),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES))
def test_it_answers_400_with_the_reason_and_stores_no_event_of_the_body(client, case):
    shop()
    change, reason = WRONG_SHAPES[case]
    good, bad = fixture("follow")["events"][0], fixture("message_text")["events"][0]
    body = {"destination": "U" + "b" * 32, "events": [good, change(bad)]}

    response = deliver(client, json.dumps(body).encode())

    assert response.status_code == 400
    assert response.json()["error"].startswith("events[1]: ") and reason in response.json()["error"]
    assert not LineWebhookEvent.objects.exists()


@pytest.mark.parametrize(
    "raw",
    [b'{"events": [], "x": "\\ud800"}', b'{"events": [{"type": "\\u0000"}]}', b'{"events": ["\xff"]}'],
    ids=["lone-surrogate", "nul", "invalid-utf8"],
)
def test_it_answers_400_to_signed_text_no_database_can_store(client, raw):
    shop()

    response = deliver(client, raw)

    assert response.status_code == 400
    assert response.json()["error"].startswith(("body refused: ", "body is not UTF-8"))
    assert not LineWebhookEvent.objects.exists()

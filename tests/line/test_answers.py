"""Survey answers and their edits (`messageEdited`): the latest version of a message by
LINE's timestamp is the answer, whatever order LINE delivers the versions in."""

from __future__ import annotations

import pytest

from line.models import LineAnswer, LineContact, LineSurveyRule, LineWebhookEvent
from tests.helpers.linepush import USER, deliver, fixture, shop

pytestmark = pytest.mark.django_db

SENT_AT = 1765324800000  # the message_text fixture's timestamp
GROUP = {"type": "group", "groupId": "C4af4980629f1e2c0f3b5d7e9a1c3e5f7", "userId": USER}


@pytest.fixture
def tenant(db):
    tenant = shop()
    LineSurveyRule.objects.create(
        tenant=tenant, name="参加", pattern="参加します", add_tags=["shoot_yes"], next_delivery=True
    )
    LineSurveyRule.objects.create(
        tenant=tenant, name="不参加", pattern="不参加", add_tags=["shoot_no"], remove_tags=["shoot_yes"]
    )
    return tenant


def sent(text: str = "撮影に参加します") -> dict:
    return fixture(
        "message_text", source=GROUP, message=fixture("message_text")["events"][0]["message"] | {"text": text}
    )


def edited(text: str, after_ms: int, event: int = 21) -> dict:
    message = fixture("message_edited")["events"][0]["message"] | {"text": text}
    return fixture(
        "message_edited",
        timestamp=SENT_AT + after_ms,
        webhookEventId=f"01JF00000000000000000000{event}",
        message=message,
    )


def contact() -> LineContact:
    return LineContact.objects.get(user_id=USER)


def test_an_edit_replaces_the_answer_of_the_message_it_edits(client, tenant, line):
    LineContact.objects.create(tenant=tenant, user_id=USER, tags=["talent"])
    deliver(client, sent())
    assert (contact().tags, contact().wants_next_delivery) == (["talent", "shoot_yes"], True)

    response = deliver(client, edited("撮影は不参加です", after_ms=60_000))

    assert response.json()["accepted"] == 1
    assert (contact().tags, contact().wants_next_delivery) == (["talent", "shoot_no"], False)
    event = LineWebhookEvent.objects.get(type="messageEdited")
    assert event.outcome == "done" and "不参加" in event.detail
    answer = LineAnswer.objects.get()
    assert (answer.text, answer.timestamp, answer.added_tags) == (
        "撮影は不参加です",
        SENT_AT + 60_000,
        ["shoot_no"],
    )


def test_an_edit_delivered_before_its_message_stays_the_answer(client, tenant, line):
    deliver(client, edited("撮影は不参加です", after_ms=60_000))
    deliver(client, sent())

    assert (contact().tags, contact().wants_next_delivery) == (["shoot_no"], False)
    original = LineWebhookEvent.objects.get(type="message")
    assert original.outcome == "done" and "a later version" in original.detail


def test_the_latest_of_several_edits_wins_whatever_their_order(client, tenant, line):
    deliver(client, sent("未定"))
    deliver(client, edited("撮影に参加します", after_ms=120_000, event=22))
    deliver(client, edited("撮影は不参加です", after_ms=60_000, event=23))

    assert (contact().tags, contact().wants_next_delivery) == (["shoot_yes"], True)
    assert LineAnswer.objects.get().text == "撮影に参加します"


def test_an_edit_that_matches_no_rule_takes_back_the_earlier_answer(client, tenant, line):
    LineContact.objects.create(tenant=tenant, user_id=USER, tags=["shoot_yes"], wants_next_delivery=True)
    deliver(client, sent())
    deliver(client, edited("まだ分かりません", after_ms=60_000))

    # The tag and the wish were there before the answer: the answer took back only its own changes.
    assert (contact().tags, contact().wants_next_delivery) == (["shoot_yes"], True)


def test_an_edit_that_is_not_text_changes_nothing(client, tenant, line):
    deliver(client, sent())
    sticker = fixture("message_edited", message={"id": "444573844083572737", "type": "sticker"})

    deliver(client, sticker)

    assert contact().tags == ["shoot_yes"]
    assert LineWebhookEvent.objects.get(type="messageEdited").detail == "not a text message from a user"

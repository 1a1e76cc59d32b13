"""line/retention.py: a message's content blanked once its event is processed (ids and
types kept, pending events whole), and a blocked user's profile removed after the grace
period, keeping the id and the blocked flag."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from core.retention import records_prune
from line.models import LineAnswer, LineContact, LineSurveyRule, LineWebhookEvent
from line.retention import payload_blanked
from tests.helpers.linepush import USER, deliver, fixture, shop

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant(db):
    return shop()


def now_ms() -> int:
    return int(timezone.now().timestamp() * 1000)


# -- message text -----------------------------------------------------------------------------


def test_a_processed_message_keeps_its_ids_and_types_and_loses_its_text(client, tenant, line):
    LineSurveyRule.objects.create(tenant=tenant, name="参加", pattern="参加します", add_tags=["shoot_yes"])

    deliver(client, fixture("message_text"))

    event = LineWebhookEvent.objects.get()
    assert event.outcome == "done"
    assert LineContact.objects.get(user_id=USER).tags == ["shoot_yes"]  # acted on before blanking
    assert event.payload["message"] == {"id": "444573844083572737", "type": "text", "blanked": True}
    assert event.payload["source"] == {"type": "user", "userId": USER}
    assert event.payload["webhookEventId"] == "01JF0000000000000000000003"
    assert "撮影に参加します" not in str(event.payload)


def stored(tenant, outcome: str, n: int, message: dict) -> LineWebhookEvent:
    payload = {"type": "message", "source": {"type": "user", "userId": USER}, "message": message}
    return LineWebhookEvent.objects.create(
        tenant=tenant, webhook_event_id=f"m{n}", type="message", payload=payload, outcome=outcome
    )


def test_the_prune_blanks_processed_messages_left_whole_and_keeps_pending_ones(tenant):
    text = {"id": "1", "type": "text", "text": "住所は東京都…", "quoteToken": "q"}
    location = {"id": "2", "type": "location", "title": "自宅", "address": "東京都…", "latitude": 35.6}
    ended = [stored(tenant, "rejected", 1, text), stored(tenant, "done", 2, location)]
    waiting = [stored(tenant, "pending", 3, text), stored(tenant, "failed", 4, text)]

    results = records_prune()

    assert ("linepush_linewebhookevent", "text blanked", 2) in results
    for event in ended:
        event.refresh_from_db()
        assert set(event.payload["message"]) == {"id", "type", "blanked"}
    for event in waiting:
        event.refresh_from_db()
        assert event.payload["message"] == text
    assert ("linepush_linewebhookevent", "text blanked", 0) in records_prune()  # once


def test_blanking_leaves_an_event_without_a_message_as_it_is():
    follow = fixture("follow")["events"][0]

    assert payload_blanked(follow) is follow


# -- a user who blocked the account -----------------------------------------------------------


def blocked_contact(client, tenant) -> LineContact:
    LineContact.objects.create(tenant=tenant, user_id=USER, display_name="山田花子", tags=["vip"])
    deliver(client, fixture("follow", timestamp=now_ms()))
    deliver(client, fixture("unfollow", timestamp=now_ms()))
    return LineContact.objects.get(user_id=USER)


def test_a_blocked_users_profile_goes_after_the_grace_period_keeping_the_id_and_the_flag(
    client, tenant, line, settings
):
    settings.RETENTION_UNFOLLOWED_DAYS = 30
    contact = blocked_contact(client, tenant)
    assert contact.blocked and contact.blocked_at is not None

    with time_machine.travel(timezone.now() + timedelta(days=29)):
        records_prune()
    contact.refresh_from_db()
    assert (contact.display_name, contact.tags) == ("山田花子", ["vip"])  # still in the grace period

    with time_machine.travel(timezone.now() + timedelta(days=31)):
        results = records_prune()
    contact.refresh_from_db()
    assert ("linepush_linecontact", "profile removed", 1) in results
    assert (contact.user_id, contact.blocked) == (USER, True)
    assert (contact.display_name, contact.tags, contact.wants_next_delivery, contact.followed_at) == (
        "",
        [],
        False,
        None,
    )


def test_a_user_who_follows_again_within_the_grace_period_keeps_the_profile(client, tenant, line):
    blocked_contact(client, tenant)
    deliver(client, fixture("follow", webhookEventId="01JF0000000000000000000009", timestamp=now_ms()))

    with time_machine.travel(timezone.now() + timedelta(days=60)):
        records_prune()

    contact = LineContact.objects.get(user_id=USER)
    assert (contact.blocked, contact.blocked_at, contact.tags) == (False, None, ["vip"])


def test_a_redelivered_unfollow_keeps_the_first_blocks_time(client, tenant, line):
    first = blocked_contact(client, tenant).blocked_at

    with time_machine.travel(timezone.now() + timedelta(days=5)):
        deliver(client, fixture("unfollow", webhookEventId="01JF000000000000000000000A", timestamp=now_ms()))

    assert LineContact.objects.get(user_id=USER).blocked_at == first


def test_a_block_set_by_hand_starts_the_grace_period_and_an_unblock_ends_it(tenant):
    contact = LineContact.objects.create(tenant=tenant, user_id=USER, display_name="山田花子")
    contact.blocked = True
    contact.save()
    assert contact.blocked_at is not None

    contact.blocked = False
    contact.save()
    assert contact.blocked_at is None


def test_a_blocked_users_survey_answers_go_with_the_profile(client, tenant, line):
    blocked_contact(client, tenant)
    LineAnswer.objects.create(tenant=tenant, message_id="1", user_id=USER, timestamp=1, text="参加します")
    other = LineAnswer.objects.create(
        tenant=tenant, message_id="2", user_id="U" + "e" * 32, timestamp=1, text="x"
    )

    with time_machine.travel(timezone.now() + timedelta(days=31)):
        records_prune()

    assert list(LineAnswer.objects.values_list("pk", flat=True)) == [other.pk]


def test_a_survey_answers_text_is_blanked_after_the_events_period_keeping_its_tags(tenant):
    answer = LineAnswer.objects.create(
        tenant=tenant, message_id="1", user_id=USER, timestamp=1, text="参加します", added_tags=["shoot_yes"]
    )
    recent = LineAnswer.objects.create(tenant=tenant, message_id="2", user_id=USER, timestamp=1, text="はい")
    LineAnswer.objects.filter(pk=answer.pk).update(updated_at=timezone.now() - timedelta(days=31))

    assert ("linepush_lineanswer", "text blanked", 1) in records_prune()

    answer.refresh_from_db()
    recent.refresh_from_db()
    assert (answer.text, answer.added_tags, answer.message_id) == ("", ["shoot_yes"], "1")
    assert recent.text == "はい"

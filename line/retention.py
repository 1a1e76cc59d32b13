"""What the retention policy removes or strips of LINE's records (core/retention.py).

- Stored webhook events: the content of a message (its text, a location, a file name)
  is blanked once the event is processed, keeping the ids and the types; processed
  events go after RETENTION_EVENTS_DAYS. Pending and failed events are kept whole.
- A user who blocked the account keeps only the id and the blocked flag (what delivery
  needs to leave them out) once RETENTION_UNFOLLOWED_DAYS have passed since the block;
  their survey answers go then too.
- A survey answer's text is blanked after RETENTION_EVENTS_DAYS (its ids and tags stay).
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Exists, OuterRef, Q

from core.retention import RetentionRule, days_ago
from line.models import LineAnswer, LineContact, LineWebhookEvent

# Of a message object (webhook.yml `MessageContent`), what a processed event keeps.
MESSAGE_KEPT = ("id", "type", "quotedMessageId")
BLANKED = "blanked"  # set in a blanked message object: the sweep passes it by


def payload_blanked(payload: dict) -> dict:
    """The event with its message's content removed; any other event as it is."""
    message = payload.get("message") if isinstance(payload, dict) else None
    if not isinstance(message, dict) or message.get(BLANKED):
        return payload
    kept = {key: message[key] for key in MESSAGE_KEPT if key in message}
    return {**payload, "message": {**kept, BLANKED: True}}


def _events_expired(now: datetime):
    return LineWebhookEvent.objects.filter(
        outcome__in=LineWebhookEvent.SETTLED, received_at__lt=days_ago(now, "RETENTION_EVENTS_DAYS")
    )


def _texts_unblanked(now: datetime):
    """Processed message events whose content is still there (they are blanked when
    processed; this catches the ones ended in bulk, e.g. given up on)."""
    return LineWebhookEvent.objects.filter(
        outcome__in=LineWebhookEvent.SETTLED, payload__message__isnull=False
    ).exclude(payload__message__has_key=BLANKED)


def _text_blank(event: LineWebhookEvent) -> list[str]:
    blanked = payload_blanked(event.payload)
    if blanked is event.payload:
        return []
    event.payload = blanked
    return ["payload"]


PROFILE_CLEARED = {"display_name": "", "tags": [], "wants_next_delivery": False, "followed_at": None}


def _profiles_expired(now: datetime):
    has_profile = (
        ~Q(display_name="") | ~Q(tags=[]) | Q(wants_next_delivery=True) | Q(followed_at__isnull=False)
    )
    return LineContact.objects.filter(
        has_profile, blocked=True, blocked_at__lt=days_ago(now, "RETENTION_UNFOLLOWED_DAYS")
    )


def _answers_texts_expired(now: datetime):
    """A survey answer's text, kept while an edit of its message may still come."""
    return LineAnswer.objects.filter(updated_at__lt=days_ago(now, "RETENTION_EVENTS_DAYS")).exclude(text="")


def _answer_text_blank(answer: LineAnswer) -> list[str]:
    answer.text = ""
    return ["text"]


def _answers_of_blocked(now: datetime):
    """The survey answers of a user whose profile goes: the tags they added go with them."""
    expired = LineContact.objects.filter(
        tenant_id=OuterRef("tenant_id"),
        user_id=OuterRef("user_id"),
        blocked=True,
        blocked_at__lt=days_ago(now, "RETENTION_UNFOLLOWED_DAYS"),
    )
    return LineAnswer.objects.filter(Exists(expired))


def _profile_clear(contact: LineContact) -> list[str]:
    for name, value in PROFILE_CLEARED.items():
        setattr(contact, name, value)
    return list(PROFILE_CLEARED)


RULES = (
    RetentionRule(LineWebhookEvent._meta.db_table, _events_expired),
    RetentionRule(LineWebhookEvent._meta.db_table, _texts_unblanked, _text_blank, "text blanked"),
    RetentionRule(LineContact._meta.db_table, _profiles_expired, _profile_clear, "profile removed"),
    RetentionRule(LineAnswer._meta.db_table, _answers_of_blocked),
    RetentionRule(LineAnswer._meta.db_table, _answers_texts_expired, _answer_text_blank, "text blanked"),
)

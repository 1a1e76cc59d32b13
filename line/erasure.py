"""A LINE user's data erased on their request (Japan's APPI): the contact row and their
survey answers, and their id wherever automedia stored it: the LINE webhook events (any
field, a mention or a member list too, with the message content blanked, and the text of
their outcome) here, and through `line_user_erasing` what the apps above stored (the LINE
channel's delivery attempts and narrowcast lists: deliveries/channels/line/erasure.py). The
erasure itself is recorded as who and when (`LineErasure`), never whose.

Rows are rewritten in batches, each its own short transaction; run again, an erasure
finds nothing left and removes what arrived in between.
"""

from __future__ import annotations

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast

from line.models import LineAnswer, LineContact, LineErasure, LineWebhookEvent
from line.retention import payload_blanked
from line.signals import line_user_erasing

BATCH = 500
ERASED = ""  # what an erased id becomes: LINE's ids are never empty
ERASED_TEXT = "[消去済み]"  # what an erased id becomes inside a text


def line_user_erase(*, contact: LineContact, by) -> LineErasure:
    """Erase `contact` and every stored trace of its user id; returns the record."""
    tenant_id, user_id = contact.tenant_id, contact.user_id
    events = records_rewrite(LineWebhookEvent, "payload", tenant_id, user_id, _event_scrubbed)
    # Outcomes written before handlers stopped naming users ("blocked U…").
    records_rewrite(LineWebhookEvent, "detail", tenant_id, user_id, text_scrubbed)
    erased = line_user_erasing.send(sender=LineContact, tenant_id=tenant_id, user_id=user_id)
    attempts = sum(count for _, count in erased)
    with transaction.atomic():
        # The admin's history of the contact names it (its display name or id).
        LogEntry.objects.filter(
            content_type=ContentType.objects.get_for_model(LineContact), object_id=str(contact.pk)
        ).update(object_repr=f"#{contact.pk}", change_message="")
        LineAnswer.objects.filter(tenant_id=tenant_id, user_id=user_id).delete()
        LineContact.objects.filter(pk=contact.pk).delete()
        return LineErasure.objects.create(
            tenant_id=tenant_id,
            erased_by=by,
            erased_by_name=by.get_username(),
            events=events,
            attempts=attempts,
        )


def records_rewrite(model, field: str, tenant_id: int, user_id: str, scrub) -> int:
    """Every row of the tenant whose `field` holds `user_id`, rewritten by `scrub`."""
    holding = (
        model.objects.filter(tenant_id=tenant_id)
        .annotate(stored_text=Cast(field, TextField()))
        .filter(stored_text__contains=user_id)
        .order_by("pk")
    )
    done, after = 0, 0
    while rows := list(holding.filter(pk__gt=after)[:BATCH]):
        changed = []
        for row in rows:
            value = scrub(getattr(row, field), user_id)
            if value != getattr(row, field):
                setattr(row, field, value)
                changed.append(row)
        if changed:
            with transaction.atomic():
                model.objects.bulk_update(changed, [field])
        done, after = done + len(changed), rows[-1].pk
    return done


def ids_replaced(value, user_id: str):
    if isinstance(value, dict):
        return {key: ids_replaced(item, user_id) for key, item in value.items()}
    if isinstance(value, list):
        return [ids_replaced(item, user_id) for item in value]
    return ERASED if value == user_id else value


def _event_scrubbed(payload: dict, user_id: str) -> dict:
    return payload_blanked(ids_replaced(payload, user_id))


def text_scrubbed(text: str, user_id: str) -> str:
    return text.replace(user_id, ERASED_TEXT)

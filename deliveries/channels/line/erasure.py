"""A LINE user's id erased from what the LINE channel stored, when line/erasure.py erases
the user's data (`line_user_erasing`): the recipients and errors of its delivery attempts,
and a narrowcast's list of user ids (narrowcast.py)."""

from __future__ import annotations

from deliveries.channels.models import ChannelPost
from deliveries.models import DeliveryAttempt
from line.erasure import ERASED, ids_replaced, records_rewrite, text_scrubbed


def line_user_erasing_received(sender, *, tenant_id: int, user_id: str, **kwargs) -> int:
    """Rewrite the channel's records of `user_id`; returns how many delivery attempts changed."""
    attempts = records_rewrite(DeliveryAttempt, "request_summary", tenant_id, user_id, _recipients_scrubbed)
    attempts += records_rewrite(DeliveryAttempt, "error", tenant_id, user_id, text_scrubbed)
    records_rewrite(ChannelPost, "details", tenant_id, user_id, _audience_scrubbed)
    return attempts


def _audience_scrubbed(details: dict, user_id: str) -> dict:
    """The user leaves a narrowcast's list; one not uploaded yet is never uploaded, and the
    upload's place in the list stays on the next id."""
    users = details.get("users") if isinstance(details, dict) else None
    if not isinstance(users, list) or user_id not in users:
        return details
    uploaded = details.get("uploaded", 0)
    if users.index(user_id) < uploaded:
        uploaded -= 1
    return {**details, "users": [u for u in users if u != user_id], "uploaded": uploaded}


def _recipients_scrubbed(summary: dict, user_id: str) -> dict:
    """The user leaves the recipients (a correction goes to the others); the count stays."""
    scrubbed = ids_replaced(summary, user_id)
    if isinstance(scrubbed.get("to"), list):
        scrubbed["to"] = [to for to in scrubbed["to"] if to != ERASED]
    return scrubbed

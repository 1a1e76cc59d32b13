"""The LINE webhook's intake: verify the signature, store each event of a body once
(webhookEventId), on its own, and enqueue one drain for the valid ones (line/events.py).

Event shapes: webhook.yml of line/line-openapi, `CallbackRequest`, `Event`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import replace

from django.conf import settings
from django.db import DataError, transaction

from core import metrics
from core.intake import Received
from core.models import Tenant
from line.event_shapes import Intake, line_event_intake
from line.events import LINE_EVENTS
from line.models import LineWebhookEvent

Outcome = LineWebhookEvent.Outcome


def signature_valid(*, secret: str, body: bytes, signature: str) -> bool:
    """HMAC-SHA256 of the raw body keyed with the channel secret, base64.

    https://developers.line.biz/en/docs/messaging-api/receiving-messages/
    """
    if not secret or not signature:
        return False
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return hmac.compare_digest(base64.b64encode(digest), signature.encode())


# What one answer lists of the odd events (each reason is bounded by DETAIL_MAX).
REASONS_MAX = 20


def line_events_accept(*, tenant: Tenant, events: list) -> dict:
    """Store each event once, on its own: a valid one pending, an odd one `rejected` with
    its reason (LINE never resends a body, so one odd event must not cost the others); one
    drain is enqueued for the body's pending events. Returns the counts and, for the odd
    ones, `events[i]: reason`.

    At most LINE_WEBHOOK_MAX_EVENTS events of one body are stored: LINE's own bodies hold a
    few, and a signed body of thousands would store as many rows; the rest are counted as
    `not_stored`."""
    cap = settings.LINE_WEBHOOK_MAX_EVENTS
    counts: dict = {"accepted": 0, "duplicate": 0, "rejected": 0}
    reasons = []
    with LINE_EVENTS.receiving() as received:
        for index, event in enumerate(events[:cap]):
            stored = _store(received, tenant, line_event_intake(event))
            result = "duplicate" if stored is None else "accepted" if not stored.is_settled() else "rejected"
            counts[result] += 1
            transaction.on_commit(lambda result=result: metrics.webhook_event_received("line", result))
            if result == "rejected":
                reasons.append(f"events[{index}]: {stored.detail}")
    if len(events) > cap:
        counts["not_stored"] = len(events) - cap
        reasons.append(f"events[{cap}:]: not stored: one body holds at most {cap} events")
    return counts | ({"reasons": _listed(reasons)} if reasons else {})


def _listed(reasons: list[str]) -> list[str]:
    if len(reasons) <= REASONS_MAX:
        return reasons
    return [*reasons[: REASONS_MAX - 1], f"… and {len(reasons) - REASONS_MAX + 1} more"]


def _store(received: Received, tenant: Tenant, intake: Intake) -> LineWebhookEvent | None:
    """The stored row, or None for a redelivery. A payload the database still refuses
    (the shape checks are meant to catch it first) is stored as a rejected id and reason."""
    try:
        return _insert(received, tenant, intake)
    except (DataError, UnicodeError) as exc:
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        reason = f"payload not stored: {first_line}"
        return _insert(received, tenant, replace(intake, payload={}, problem=reason))


def _insert(received: Received, tenant: Tenant, intake: Intake) -> LineWebhookEvent | None:
    row = LineWebhookEvent(
        tenant=tenant, webhook_event_id=intake.event_id, type=intake.type, payload=intake.payload
    )
    if intake.problem:
        for field, value in LineWebhookEvent.finished(
            outcome=Outcome.REJECTED, detail=intake.problem
        ).items():
            setattr(row, field, value)
    return row if received.store(row) else None

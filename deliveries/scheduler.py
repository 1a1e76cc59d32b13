"""Claiming due schedules under a lease, safely from several processes at once.

PostgreSQL: `SELECT … FOR UPDATE SKIP LOCKED` in a short transaction. SQLite (and
anything else): a conditional UPDATE per row that must change exactly one row.
A claim is a lease: if the worker dies, the row is due again when it expires.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, Min, Q, Value, When

from core.models import Tenant
from deliveries.models import DeliverySchedule, SchedulerHeartbeat


def lease_length() -> timedelta:
    return timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)


def _due(now: datetime) -> Q:
    return Q(due_at__lte=now) & (Q(lease_until__isnull=True) | Q(lease_until__lte=now))


def new_token() -> str:
    return uuid.uuid4().hex


def schedules_claim(*, now: datetime, limit: int = 50) -> list[tuple[int, str]]:
    """Claim up to `limit` due rows; returns (schedule id, claim token) pairs."""
    if connection.vendor == "postgresql":
        return _claim_skip_locked(now, limit)
    return _claim_conditional(now, limit)


def _in_flight(now: datetime) -> Counter:
    rows = DeliverySchedule.objects.filter(lease_until__gt=now).values("tenant_id").annotate(n=Count("id"))
    return Counter({r["tenant_id"]: r["n"] for r in rows})


def _within_capacity(candidates: list[DeliverySchedule], now: datetime) -> list[DeliverySchedule]:
    """Per-tenant concurrency limit (Tenant.max_concurrent_deliveries)."""
    busy = _in_flight(now)
    limits = dict(
        Tenant.objects.filter(pk__in={c.tenant_id for c in candidates}).values_list(
            "pk", "max_concurrent_deliveries"
        )
    )
    chosen = []
    for row in candidates:
        if busy[row.tenant_id] < limits.get(row.tenant_id, 1):
            busy[row.tenant_id] += 1
            chosen.append(row)
    return chosen


def _claim_skip_locked(now: datetime, limit: int) -> list[tuple[int, str]]:
    with transaction.atomic():
        candidates = list(
            DeliverySchedule.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(_due(now))
            .only("id", "tenant_id")
            .order_by("due_at")[: limit * 2]
        )
        claimed = [(row.pk, new_token()) for row in _within_capacity(candidates, now)[:limit]]
        if claimed:  # the rows are locked by this transaction: one UPDATE gives each its token
            tokens = Case(*(When(pk=pk, then=Value(token)) for pk, token in claimed))
            DeliverySchedule.objects.filter(pk__in=[pk for pk, _ in claimed]).update(
                lease_until=now + lease_length(), claimed_by=tokens
            )
    return claimed


def _claim_conditional(now: datetime, limit: int) -> list[tuple[int, str]]:
    candidates = list(
        DeliverySchedule.objects.filter(_due(now)).only("id", "tenant_id").order_by("due_at")[: limit * 2]
    )
    claimed = []
    for row in _within_capacity(candidates, now)[:limit]:
        token = new_token()
        hit = DeliverySchedule.objects.filter(_due(now), pk=row.pk).update(
            lease_until=now + lease_length(), claimed_by=token
        )
        if hit == 1:  # 0 = another scheduler claimed it between our read and write
            claimed.append((row.pk, token))
    return claimed


def lease_renew(*, schedule_id: int, token: str, now: datetime) -> bool:
    """Extend a claim before each slow step; False when the claim was lost."""
    return (
        DeliverySchedule.objects.filter(pk=schedule_id, claimed_by=token).update(
            lease_until=now + lease_length()
        )
        == 1
    )


def lease_release(*, schedule_id: int, token: str, **changes) -> bool:
    """Give the row back (optionally with a new due time, error, …) if we still hold it."""
    return (
        DeliverySchedule.objects.filter(pk=schedule_id, claimed_by=token).update(
            lease_until=None, claimed_by="", **changes
        )
        == 1
    )


def next_wakeup(*, now: datetime, poll: float) -> float:
    """Seconds until a row could next become claimable, bounded by the poll interval.

    Only future events count: a row that is due now but held back (its tenant is at
    capacity) must not make the loop spin; it is looked at again after `poll`.
    """
    agg = DeliverySchedule.objects.aggregate(
        free=Min("due_at", filter=Q(lease_until__isnull=True, due_at__gt=now)),
        leased=Min("lease_until", filter=Q(lease_until__gt=now)),
    )
    times = [t for t in (agg["free"], agg["leased"]) if t is not None]
    if not times:
        return poll
    return max(0.0, min(poll, (min(times) - now).total_seconds()))


def heartbeat(*, name: str, now: datetime) -> None:
    SchedulerHeartbeat.objects.update_or_create(name=name, defaults={"last_beat": now})

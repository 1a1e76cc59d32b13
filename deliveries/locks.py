"""The delivery lock per (tenant, issue): one run of an issue at a time, across workers."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Exists, OuterRef, Q

from core.models import Tenant
from deliveries.models import DeliveryLock, DeliverySchedule


def lock_take(*, tenant: Tenant, issue_key: str, owner: str, now: datetime) -> bool:
    """Take the delivery lock; a second taker gets False.

    A lock is live while it has not expired (1 hour) and its owner still holds a
    live claim on a schedule; otherwise the next taker may take it over.
    """
    expires = now + timedelta(seconds=DeliveryLock.TTL_SECONDS)
    if locks_take(keys=[(tenant.pk, issue_key)], owner=owner, now=now):
        return True
    live_claim = DeliverySchedule.objects.filter(claimed_by=OuterRef("owner"), lease_until__gt=now)
    stale = Q(expires_at__lte=now) | ~Q(Exists(live_claim)) | Q(owner=owner)
    return (
        DeliveryLock.objects.filter(tenant=tenant, issue_key=issue_key)
        .filter(stale)
        .update(owner=owner, taken_at=now, expires_at=expires)
        == 1
    )


def locks_take(*, keys: list[tuple[int, str]], owner: str, now: datetime) -> set[tuple[int, str]]:
    """Locks ((tenant id, issue key) pairs: a batch's, or `lock_take`'s one) in one
    `INSERT … ON CONFLICT DO NOTHING RETURNING` (SQLite ≥ 3.35, PostgreSQL): no savepoint
    and no IntegrityError round trip when a lock is held. Returns the pairs taken. A pair
    already locked (held, or left stale by a dead worker) is not taken here; its run asks
    `lock_take`, which may take it over."""
    if not keys:
        return set()
    stamp = DeliveryLock._meta.get_field("taken_at").get_db_prep_save
    taken, expires = (
        stamp(now, connection),
        stamp(now + timedelta(seconds=DeliveryLock.TTL_SECONDS), connection),
    )
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(keys))
    params = [value for tenant_id, key in keys for value in (tenant_id, key, owner, taken, expires)]
    sql = (
        f"INSERT INTO {DeliveryLock._meta.db_table} (tenant_id, issue_key, owner, taken_at, expires_at)"
        f" VALUES {values} ON CONFLICT (tenant_id, issue_key) DO NOTHING RETURNING tenant_id, issue_key"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {(tenant_id, key) for tenant_id, key in cursor.fetchall()}


def lock_release(*, tenant: Tenant, issue_key: str, owner: str) -> None:
    locks_release(keys=[(tenant.pk, issue_key)], owner=owner)


def locks_release(*, keys: list[tuple[int, str]], owner: str) -> None:
    """The locks of these (tenant id, issue key) pairs that `owner` holds, in one DELETE (the
    ORM's `.delete()` adds a transaction and a collector around it)."""
    if not keys:
        return
    pairs = " OR ".join(["(tenant_id = %s AND issue_key = %s)"] * len(keys))
    params = [value for pair in keys for value in pair]
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {DeliveryLock._meta.db_table} WHERE owner = %s AND ({pairs})", [owner, *params]
        )

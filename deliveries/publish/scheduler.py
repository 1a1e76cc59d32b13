"""Claiming due schedules under a lease (core/due.py), safely from several processes at once,
within each tenant's concurrency limit; the loop's wake-up time and heartbeat.

Only sends are claimed here: a row at the write-back stage belongs to the write-backs' queue
(deliveries/writeback/queue.py), which never takes a tenant's delivery capacity.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime

from django.conf import settings
from django.db.models import Count, F, Min, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from core.due import claim, hand_out, per_token, waiting
from core.models import Tenant
from deliveries.claimed import SCHEDULE_LEASE
from deliveries.models import DeliverySchedule, SchedulerHeartbeat

DELIVERY_QUEUE = "deliveries"  # settings.Q_CLUSTER["ALT_CLUSTERS"]


class Capacity:
    """The tenants' room for more claimed sends in one pass: what each may still take, read
    once (every live claim counted by tenant, then the limits of those tenants)."""

    def __init__(self, now: datetime) -> None:
        self.busy = _in_flight(now)
        self.limits = _limits(set(self.busy))

    def full(self) -> list[int]:
        return [tenant_id for tenant_id, n in self.busy.items() if n >= self.limits.get(tenant_id, 1)]

    def choose(self, candidates: list[DeliverySchedule]) -> list[DeliverySchedule]:
        self.limits |= _limits({c.tenant_id for c in candidates} - set(self.limits))
        chosen = []
        for row in candidates:
            if self.busy[row.tenant_id] < self.limits.get(row.tenant_id, 1):
                self.busy[row.tenant_id] += 1
                chosen.append(row)
        return interleaved(chosen)


def interleaved(rows: list[DeliverySchedule]) -> list[DeliverySchedule]:
    """Rows in due order, the tenants' rows of one second taking turns (each tenant's own
    in due order): the tasks made from them in this order mix the tenants, so another
    tenant's post due at the same second as a campaign leaves in the first tasks."""
    rank: Counter = Counter()
    keyed = []
    for row in sorted(rows, key=lambda r: (r.due_at, r.pk)):  # pk: the same order on every database
        rank[row.tenant_id] += 1
        keyed.append((row.due_at.replace(microsecond=0), rank[row.tenant_id], row))
    return [row for _, _, row in sorted(keyed, key=lambda k: k[:2])]


def shared_out(due: QuerySet, *, limit: int) -> QuerySet:
    """`due` bounded to each tenant's soonest share of `limit` when several tenants have due
    rows: a tenant's campaign of 1,000 fills no pass, so the rows of another tenant due at
    the same second are among the candidates (one more query, only with several tenants)."""
    tenants = due.order_by().values("tenant_id").distinct().count()
    if tenants < 2:
        return due
    share = math.ceil(limit / tenants)
    rank = Window(RowNumber(), partition_by=[F("tenant_id")], order_by=[F("due_at").asc(), F("pk").asc()])
    soonest = due.order_by().annotate(rank=rank).filter(rank__lte=share).values("pk")
    return due.filter(pk__in=soonest)


def schedules_claim(
    *, now: datetime, limit: int = 50, tenants: list[int] | None = None, capacity: Capacity | None = None
) -> list[tuple[int, str]]:
    """Claim up to `limit` due sends; returns (schedule id, claim token) pairs, one token per
    run of rows in order (`task_rows`): the rows `schedules_step` hands to one task. The rows
    of a tenant at its limit are not read at all, so another tenant's row due at the same
    second is never stuck behind them. `tenants`: only these tenants' rows (a batch's refill)."""
    capacity = capacity or Capacity(now)
    due = DeliverySchedule.objects.filter(due_at__lte=now, stage=DeliverySchedule.Stage.DELIVER)
    if tenants is not None:
        due = due.filter(tenant_id__in=tenants)
    if full := capacity.full():
        due = due.exclude(tenant_id__in=full)
    if tenants is None:
        due = shared_out(due, limit=limit)
    return claim(
        due.only("id", "tenant_id", "lease_until", "due_at").order_by("due_at"),
        now=now,
        lease=SCHEDULE_LEASE,
        limit=limit,
        read=limit * 2,
        choose=capacity.choose,
        queued=True,
        group=task_rows if tenants is None else limit,  # a refill's rows are its own task's
    )


def others_waiting(*, tenants: list[int], now: datetime) -> bool:
    """Whether another tenant has a send due that no worker runs yet (due and free, or its
    task still waiting in the broker or a cluster's queue): a batch's refill then gives its
    worker back."""
    unstarted = SCHEDULE_LEASE.free(now) | waiting(SCHEDULE_LEASE)
    due = DeliverySchedule.objects.filter(unstarted, due_at__lte=now, stage=DeliverySchedule.Stage.DELIVER)
    return due.exclude(tenant_id__in=tenants).exists()


def task_size() -> int:
    """The most rows one `deliver_batch` task runs (and claims again as it refills)."""
    return max(1, settings.DELIVERY_TASK_SIZE)


def task_rows(claimed: int) -> int:
    """Rows per task for `claimed` rows: spread evenly over the deliverers' workers
    (DELIVERY_WORKERS times the deliverers of DATABASE_PROCESSES), at most `task_size()`
    each. A task's own cost (django-q2's, the batch's reads, its refill's claim) is paid once
    for its rows, so a burst goes out in as few tasks as keep every worker busy."""
    deliverers = max(1, settings.DATABASE_PROCESSES.get("deliverer", 1))
    workers = max(1, settings.Q_CLUSTER["ALT_CLUSTERS"][DELIVERY_QUEUE]["workers"]) * deliverers
    return min(task_size(), max(1, math.ceil(claimed / workers)))


def schedules_step(*, now: datetime, limit: int) -> bool:
    """run_scheduler's step for due schedules: claim them and hand them to django-q2
    `deliver_batch` tasks on the deliveries queue, one per token: spread over the
    deliverers' workers (`task_rows`). Rows a tenant's limit leaves behind are not the
    loop's to watch: the tasks whose sends end claim them (`deliver_batch`), and a lost
    task's room comes back with its lease, seen by the next pass."""
    claimed = schedules_claim(now=now, limit=limit)
    hand_out("deliveries.tasks.deliver_batch", per_token(claimed), queue=DELIVERY_QUEUE)
    return bool(claimed)


def _in_flight(now: datetime) -> Counter:
    """Claimed sends per tenant (queued for or running on a deliverer)."""
    rows = (
        DeliverySchedule.objects.filter(SCHEDULE_LEASE.held(now), stage=DeliverySchedule.Stage.DELIVER)
        .values("tenant_id")
        .annotate(n=Count("id"))
    )
    return Counter({r["tenant_id"]: r["n"] for r in rows})


def _limits(tenant_ids: set[int]) -> dict[int, int]:
    """Tenant.max_concurrent_deliveries of these tenants."""
    if not tenant_ids:
        return {}
    return dict(Tenant.objects.filter(pk__in=tenant_ids).values_list("pk", "max_concurrent_deliveries"))


def next_wakeup(*, now: datetime, poll: float) -> float:
    """Seconds until a row could next become claimable, bounded by the poll interval.

    Only future events count: a row that is due now but held back (its tenant is at
    capacity) must not make the loop spin; it is looked at again after `poll`.
    """
    agg = DeliverySchedule.objects.aggregate(
        free=Min("due_at", filter=Q(lease_until__isnull=True, due_at__gt=now)),
        leased=Min("lease_until", filter=Q(lease_until__gt=now)),
        prepare=Min("prepare_at", filter=Q(prepare_at__gt=now)),  # deliveries/prepare/ahead.py
    )
    times = [t for t in (agg["free"], agg["leased"], agg["prepare"]) if t is not None]
    if not times:
        return poll
    return max(0.0, min(poll, (min(times) - now).total_seconds()))


def heartbeat(*, name: str, now: datetime) -> None:
    SchedulerHeartbeat.objects.update_or_create(name=name, defaults={"last_beat": now})

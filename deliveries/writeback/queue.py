"""The write-backs' queue: schedules at the write-back stage, claimed apart from the sends.

A send ends by giving its row back at the write-back stage (deliveries/publish/delivery.py). This
queue claims those rows once the tenant has no send due and unclaimed, one tenant at a time (Backlog asks for one user's calls in series)
and hands them to a task on the default queue, never to a deliverer: a write-back takes
neither a send's capacity nor its worker. The task writes them back in order through a
client paced by Backlog's `X-RateLimit-*` headers; when the update budget is spent it gives
the rest back due at the window's reset instead of sleeping in the worker.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from backlog_bridge.client import BacklogClient, paced_client
from core.due import claim, hand_out
from core.keeper import keeper
from deliveries.claimed import SCHEDULE_LEASE, lease_release, schedules_take
from deliveries.models import DeliverySchedule
from deliveries.signals import delivery_finished
from deliveries.writeback.issue_update import writeback_claimed

logger = logging.getLogger(__name__)

WRITEBACK = DeliverySchedule.Stage.WRITEBACK
PACED = "Backlog の更新枠の回復待ち"  # last_error of a write-back given back until the window restarts


def writebacks_claim(*, now: datetime, limit: int) -> list[list[tuple[int, str]]]:
    """Claim due write-backs of the tenants that have none under way, at most
    WRITEBACK_BATCH each: one list of (schedule id, token) per tenant, oldest first."""
    # Under way, or waiting for Backlog's window to restart (what one process's pacer
    # learnt holds for every process: the budget is the API key's).
    busy = (
        DeliverySchedule.objects.filter(
            Q(SCHEDULE_LEASE.held(now)) | Q(last_error=PACED, due_at__gt=now), stage=WRITEBACK
        )
        .values_list("tenant_id", flat=True)
        .distinct()
    )
    # Publishing comes first: while a tenant has sends due and not yet claimed (a burst),
    # its write-backs wait.
    sending = (
        DeliverySchedule.objects.filter(
            SCHEDULE_LEASE.free(now), stage=DeliverySchedule.Stage.DELIVER, due_at__lte=now
        )
        .values_list("tenant_id", flat=True)
        .distinct()
    )
    due = (
        DeliverySchedule.objects.filter(stage=WRITEBACK, due_at__lte=now)
        .exclude(tenant_id__in=list(busy) + list(sending))
        .only("id", "tenant_id", "lease_until")
        .order_by("due_at")
    )
    tenant_of: dict[int, int] = {}

    def choose(candidates: list[DeliverySchedule]) -> list[DeliverySchedule]:
        taken: Counter = Counter()
        for row in candidates:
            if taken[row.tenant_id] < settings.WRITEBACK_BATCH:
                taken[row.tenant_id] += 1
                tenant_of[row.pk] = row.tenant_id
        return [row for row in candidates if row.pk in tenant_of]

    claimed = claim(
        due, now=now, lease=SCHEDULE_LEASE, limit=limit, read=limit * 2, choose=choose, queued=True
    )
    by_tenant: dict[int, list[tuple[int, str]]] = {}
    for pk, token in claimed:
        by_tenant.setdefault(tenant_of[pk], []).append((pk, token))
    return list(by_tenant.values())


def writebacks_step(*, now: datetime, limit: int) -> bool:
    """run_scheduler's step for due write-backs: one `writeback_batch` task per tenant (its
    rows each under a token of their own), on the default queue, never a deliverer's."""
    batches = writebacks_claim(now=now, limit=limit)
    hand_out("deliveries.tasks.writeback_batch", [(rows,) for rows in batches])
    return bool(batches)


def writebacks_run(claims: list[tuple[int, str]]) -> list[str]:
    """One tenant's write-backs, one after another (`writeback_batch`'s work)."""
    taken = schedules_take(claims=claims, now=timezone.now())
    rows = DeliverySchedule.objects.select_related("task", "tenant").filter(pk__in=list(taken))
    schedules = {row.pk: row for row in rows if row.claimed_by == taken[row.pk].owner}
    results = []
    with keeper.keeping(*taken.values()):
        for pk, _ in claims:
            schedule = schedules.get(pk)
            if schedule is None:
                results.append("not claimed")
                continue
            backlog = paced_client(schedule.tenant)
            if wait := _budget_wait(backlog):
                results.append(_later(schedule, taken[pk].owner, wait))
                continue
            result = writeback_claimed(schedule=schedule, token=taken[pk].owner, backlog=backlog)
            keeper.drop(taken[pk])
            # The dashboard's outcome per day (console keeps "delivered" and "failed").
            delivery_finished.send(
                writebacks_run, tenant_id=schedule.tenant_id, task_id=schedule.task_id, result=result
            )
            results.append(result)
    return results


def _budget_wait(backlog: BacklogClient) -> float:
    return backlog.pacer.wait_needed("update") if backlog.pacer is not None else 0.0


def _later(schedule: DeliverySchedule, token: str, wait: float) -> str:
    """Backlog's update budget is spent: due again when its window restarts."""
    lease_release(
        schedule_id=schedule.pk,
        token=token,
        due_at=timezone.now() + timedelta(seconds=wait),
        last_error=PACED,
    )
    return f"write-back paced: {wait:.1f}s"

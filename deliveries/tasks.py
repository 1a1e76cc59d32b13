"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

import logging
import time

from django.utils import timezone

from core.due import handed
from core.group_commit import GroupCommit
from core.keeper import Held, in_threads, keeper
from core.models import Tenant
from deliveries.channels.effect_reports import effect_reports_run
from deliveries.channels.token_upkeep import channel_tokens_upkeep
from deliveries.claimed import SCHEDULE_LEASE, schedules_take
from deliveries.locks import locks_take
from deliveries.models import DeliverySchedule
from deliveries.prepare.ahead import prepare_run, prepared_issue
from deliveries.publish.batch_reads import issues_prefetch, sent_before
from deliveries.publish.delivery import Batched, delivery_run
from deliveries.publish.scheduler import others_waiting, schedules_claim, task_size
from deliveries.safety_net.scan import scan_alert, scan_run, scan_totals
from deliveries.signals import delivery_finished
from deliveries.writeback.queue import writebacks_run

logger = logging.getLogger(__name__)

# How long a batch's task goes on refilling its tenants' room before it leaves the rest to
# the scheduler (the worker is then free for other tenants' tasks).
REFILL_SECONDS = 10.0


@handed(DeliverySchedule, SCHEDULE_LEASE)
def deliver(schedule_id: int, token: str) -> str:
    [result] = deliver_batch([(schedule_id, token)])
    return result


@handed(DeliverySchedule, SCHEDULE_LEASE)
def deliver_batch(claims: list[tuple[int, str]]) -> list[str]:
    """Several claimed schedules in one task (run_scheduler groups what one pass claimed):
    django-q2's own cost per task is paid once per batch, and the rows run concurrently
    (one thread each), so one slow platform call delays none of the others. The keeper
    renews every row's claim until its run ends. One delivery's unexpected error does not
    stop the others; its row is claimed again when its lease expires.

    Then the task refills the room its rows freed: it claims its tenants' next due sends
    itself and runs them, until none is due or REFILL_SECONDS have passed, so a tenant at
    its limit waits for no scheduler pass (work-conserving), unless another tenant's send
    is due and waiting: then the worker goes back to the broker (fair between tenants)."""
    started = time.monotonic()
    results, tenants = _run(claims)
    while tenants and time.monotonic() - started < REFILL_SECONDS:
        now = timezone.now()
        if others_waiting(tenants=sorted(tenants), now=now):
            break
        more = schedules_claim(now=now, limit=task_size(), tenants=sorted(tenants))
        if not more:
            break
        tenants = _run(more)[1]
    return results


def _run(claims: list[tuple[int, str]]) -> tuple[list[str], set[int]]:
    """The rows' results, and the tenants whose sends they were."""
    taken = schedules_take(claims=claims, now=timezone.now())
    with keeper.keeping(*taken.values()):
        batch = _Batch(taken)
        results = in_threads(batch.run, claims)
    return results, {batch.owners[pk][0] for pk in batch.sends if pk in batch.owners}


class _Batch:
    """What the rows of one task share: the rows read once, the issues read in one
    Backlog call per tenant, how many sends are still running, and one group commit for
    the rows' records (core/group_commit.py)."""

    def __init__(self, taken: dict[int, Held]) -> None:
        self.taken = taken
        # Read before the runs (a delivery that ends deletes its schedule): the rows and
        # their tasks in one query, each tenant once (its secrets are decrypted on load).
        rows = DeliverySchedule.objects.select_related("task").filter(pk__in=list(taken))
        self.schedules = {row.pk: row for row in rows if row.claimed_by == taken[row.pk].owner}
        tenants = Tenant.objects.in_bulk({row.tenant_id for row in self.schedules.values()})
        self.owners, self.sends, to_read, now = {}, set(), {}, timezone.now()
        self.issues = {}  # read ahead of the due second (deliveries/prepare/ahead.py), else now
        for pk, row in self.schedules.items():
            row.tenant = tenants[row.tenant_id]
            self.owners[pk] = (row.tenant_id, row.task_id)
            if row.stage == DeliverySchedule.Stage.DELIVER:
                self.sends.add(pk)
                if (issue := prepared_issue(row, now)) is not None:
                    self.issues[pk] = issue
                elif row.task.issue_id is not None:
                    to_read[pk] = (row.tenant_id, row.task.issue_id)
        if len(to_read) > 1:
            self.issues |= issues_prefetch(rows=to_read, tenants=tenants)
        owner = next(iter(taken.values())).owner if taken else ""
        keys = {pk: (row.tenant_id, row.task.issue_key) for pk, row in self.schedules.items()}
        locked = locks_take(keys=list(keys.values()), owner=owner, now=timezone.now())
        self.locked = {pk for pk, key in keys.items() if key in locked}
        # Under the claim and the lock, what was sent before is known now for the batch.
        mine = [self.schedules[pk].task for pk in self.sends & self.locked]
        sent = sent_before(tasks=mine)
        self.fresh = {pk for pk in self.sends & self.locked if self.schedules[pk].task_id not in sent}
        self.writes = GroupCommit()

    def run(self, claim: tuple[int, str]) -> str:
        schedule_id, _ = claim
        held = self.taken.get(schedule_id)
        if held is None:
            return "not claimed"  # done, or taken by another claim meanwhile
        try:
            result = delivery_run(schedule_id=schedule_id, token=held.owner, batch=self._batched(schedule_id))
        except Exception:
            logger.exception("delivery of schedule %s failed", schedule_id)
            result = "error"
        finally:
            keeper.drop(held)
        if schedule_id in self.owners:  # the dashboard's outcomes per day
            tenant_id, task_id = self.owners[schedule_id]
            delivery_finished.send(deliver_batch, tenant_id=tenant_id, task_id=task_id, result=result)
        return result

    def _batched(self, schedule_id: int) -> Batched | None:
        """What this batch did for the row; None when it did not read the row (its run reads it)."""
        schedule = self.schedules.get(schedule_id)
        if schedule is None:
            return None
        return Batched(
            schedule=schedule,
            issue=self.issues.get(schedule_id),
            locked=schedule_id in self.locked,
            fresh=schedule_id in self.fresh,
            writes=self.writes,
        )


@handed(DeliverySchedule, SCHEDULE_LEASE)
def writeback_batch(claims: list[tuple[int, str]]) -> list[str]:
    """One tenant's due write-backs, written back in order on the default queue
    (deliveries/writeback/queue.py)."""
    return writebacks_run(claims)


def prepare_batch(ids: list[int]) -> int:
    """Sends due soon, prepared ahead of their second on the default queue (deliveries/prepare/ahead.py)."""
    return prepare_run(ids)


def effect_reports() -> int:
    """Every 10 minutes: post the 24 h / 72 h effect-measurement comments that are due."""
    return effect_reports_run()


def channel_tokens() -> dict[str, int]:
    """Daily: refresh Instagram / TikTok tokens before they expire (deliveries/channels/token_upkeep.py)."""
    return channel_tokens_upkeep()


def scan_daily() -> dict[str, int]:
    """Daily safety net: rescue approved issues without a schedule; alert ADMINS on any leak."""
    results = scan_run(tenants=Tenant.objects.filter(is_active=True), dry_run=False)
    scan_alert(results)
    return scan_totals(results)

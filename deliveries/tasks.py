"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

import logging
import threading

from django.utils import timezone

from core.group_commit import GroupCommit
from core.keeper import Held, in_threads, keeper
from core.models import Tenant
from deliveries.batch_reads import issues_prefetch, sent_before
from deliveries.delivery import delivery_run
from deliveries.effects import effect_reports_run
from deliveries.locks import locks_take
from deliveries.models import DeliverySchedule
from deliveries.scan import scan_alert, scan_run, scan_totals
from deliveries.scheduler import schedules_take
from deliveries.signals import delivery_finished
from deliveries.tokens import channel_tokens_upkeep

logger = logging.getLogger(__name__)


def deliver(schedule_id: int, token: str) -> str:
    [result] = deliver_batch([(schedule_id, token)])
    return result


def deliver_batch(claims: list[tuple[int, str]]) -> list[str]:
    """Several claimed schedules in one task (run_scheduler groups what one pass claimed):
    django-q2's own cost per task is paid once per batch, and the rows run concurrently
    (one thread each), so one slow platform call delays none of the others. The keeper
    renews every row's claim until its run ends. One delivery's unexpected error does not
    stop the others; its row is claimed again when its lease expires."""
    taken = schedules_take(claims=claims, now=timezone.now())
    with keeper.keeping(*taken.values()):
        batch = _Batch(taken)
        return in_threads(batch.run, claims)


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
        self.owners, self.sends, to_read = {}, set(), {}
        for pk, row in self.schedules.items():
            row.tenant = tenants[row.tenant_id]
            self.owners[pk] = (row.tenant_id, row.task_id)
            if row.stage == DeliverySchedule.Stage.DELIVER:
                self.sends.add(pk)
                if row.task.issue_id is not None:
                    to_read[pk] = (row.tenant_id, row.task.issue_id)
        self.issues = issues_prefetch(rows=to_read, tenants=tenants) if len(to_read) > 1 else {}
        owner = next(iter(taken.values())).owner if taken else ""
        keys = {pk: (row.tenant_id, row.task.issue_key) for pk, row in self.schedules.items()}
        locked = locks_take(keys=list(keys.values()), owner=owner, now=timezone.now())
        self.locked = {pk for pk, key in keys.items() if key in locked}
        # Under the claim and the lock, what was sent before is known now for the batch.
        mine = [self.schedules[pk].task for pk in self.sends & self.locked]
        sent = sent_before(tasks=mine)
        self.fresh = {pk for pk in self.sends & self.locked if self.schedules[pk].task_id not in sent}
        self.running = len(self.sends)
        self.lock = threading.Lock()
        self.writes = GroupCommit()

    def others_sending(self) -> bool:
        """Another send of the batch is still running (asked by a run that has just sent)."""
        with self.lock:
            return self.running > 1

    def run(self, claim: tuple[int, str]) -> str:
        schedule_id, _ = claim
        held = self.taken.get(schedule_id)
        if held is None:
            return "not claimed"  # done, or taken by another claim meanwhile
        try:
            result = delivery_run(
                schedule_id=schedule_id,
                token=held.owner,
                schedule=self.schedules.get(schedule_id),
                locked=schedule_id in self.locked,
                fresh=schedule_id in self.fresh,
                issue=self.issues.get(schedule_id),
                sends_follow=_Asked(self.others_sending) if schedule_id in self.sends else False,
                writes=self.writes,
            )
        except Exception:
            logger.exception("delivery of schedule %s failed", schedule_id)
            result = "error"
        finally:
            keeper.drop(held)
            with self.lock:
                self.running -= schedule_id in self.sends
        if schedule_id in self.owners:  # the dashboard's outcomes per day
            tenant_id, task_id = self.owners[schedule_id]
            delivery_finished.send(deliver_batch, tenant_id=tenant_id, task_id=task_id, result=result)
        return result


class _Asked:
    """A truth value read when it is tested (delivery's `sends_follow`, asked after a send)."""

    def __init__(self, ask) -> None:
        self.ask = ask

    def __bool__(self) -> bool:
        return self.ask()


def effect_reports() -> int:
    """Every 10 minutes: post the 24 h / 72 h effect-measurement comments that are due."""
    return effect_reports_run()


def channel_tokens() -> dict[str, int]:
    """Daily: refresh Instagram / TikTok tokens before they expire (deliveries/tokens.py)."""
    return channel_tokens_upkeep()


def scan_daily() -> dict[str, int]:
    """Daily safety net: rescue approved issues without a schedule; alert ADMINS on any leak."""
    results = scan_run(tenants=Tenant.objects.filter(is_active=True), dry_run=False)
    scan_alert(results)
    return scan_totals(results)

"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

import logging

from core.models import Tenant
from deliveries.delivery import delivery_run, issues_prefetch
from deliveries.effects import effect_reports_run
from deliveries.models import DeliverySchedule
from deliveries.scan import scan_alert, scan_run, scan_totals
from deliveries.signals import delivery_finished
from deliveries.tokens import channel_tokens_upkeep

logger = logging.getLogger(__name__)


def deliver(schedule_id: int, token: str) -> str:
    [result] = deliver_batch([(schedule_id, token)])
    return result


def deliver_batch(claims: list[tuple[int, str]]) -> list[str]:
    """Several claimed schedules in one task (run_scheduler groups what one pass claimed):
    django-q2's own cost per task is paid once per batch. One delivery's unexpected error
    does not stop the others; its row is claimed again when its lease expires."""
    # Read before the runs: a delivery that ends deletes its schedule.
    rows = DeliverySchedule.objects.filter(pk__in=[schedule_id for schedule_id, _ in claims]).values_list(
        "pk", "tenant_id", "task_id", "stage", "task__issue_id"
    )
    owners, sends, to_read = {}, set(), {}
    for pk, tenant_id, task_id, stage, issue_id in rows:
        owners[pk] = (tenant_id, task_id)
        if stage == DeliverySchedule.Stage.DELIVER:
            sends.add(pk)
            if issue_id is not None:
                to_read[pk] = (tenant_id, issue_id)
    issues = issues_prefetch(rows=to_read) if len(to_read) > 1 else {}
    sends_left = len(sends)
    results = []
    for schedule_id, token in claims:
        sends_left -= schedule_id in sends
        try:
            result = delivery_run(
                schedule_id=schedule_id,
                token=token,
                issue=issues.get(schedule_id),
                sends_follow=sends_left > 0,
            )
        except Exception:
            logger.exception("delivery of schedule %s failed", schedule_id)
            result = "error"
        if schedule_id in owners:  # the dashboard's outcomes per day
            tenant_id, task_id = owners[schedule_id]
            delivery_finished.send(deliver_batch, tenant_id=tenant_id, task_id=task_id, result=result)
        results.append(result)
    return results


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

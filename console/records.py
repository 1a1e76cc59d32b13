"""Records the dashboard reads: how deliveries ended, which approvals were refused, what the
last scan found. Written on the lower layers' signals (`deliveries.signals.delivery_finished`,
`approval_refused`, `scan_finished`), connected in ConsoleConfig.ready."""

from __future__ import annotations

from datetime import datetime

from console.models import DeliveryOutcome, ScanRun
from core.retention import RetentionRule, days_ago

# `delivery_run`'s final results (deliveries.publish.delivery); anything else is not an end
# (a retry, a deferral, a lost claim, a write-back still pending).
ENDINGS = {
    "delivered": DeliveryOutcome.Kind.SENT,
    "failed": DeliveryOutcome.Kind.FAILED,
    "already delivered": DeliveryOutcome.Kind.SKIPPED,
    "no longer approved": DeliveryOutcome.Kind.SKIPPED,
}


def delivery_outcome_record(*, tenant_id: int, task_id: int, result: str) -> DeliveryOutcome | None:
    kind = ENDINGS.get(result)
    if kind is None:
        return None
    return DeliveryOutcome.objects.create(tenant_id=tenant_id, task_id=task_id, kind=kind, detail=result)


def refusal_record(*, task, message: str) -> DeliveryOutcome:
    """The refusal's problems (the comment's "- " lines), or its first line, as the detail."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    problems = [line.removeprefix("- ") for line in lines if line.startswith("- ")]
    detail = (" / ".join(problems) or lines[0]) if lines else ""
    max_length = DeliveryOutcome._meta.get_field("detail").max_length
    if len(detail) > max_length:
        detail = detail[: max_length - 1] + "…"
    return DeliveryOutcome.objects.create(
        tenant_id=task.tenant_id, task=task, kind=DeliveryOutcome.Kind.REFUSED, detail=detail
    )


def scan_record(*, results: list, totals: dict[str, int], dry_run: bool) -> ScanRun:
    """`results`: deliveries.safety_net.scan.ScanResult per tenant."""
    return ScanRun.objects.create(dry_run=dry_run, totals=totals, results=[r.to_json() for r in results])


def delivery_finished_received(sender, *, tenant_id: int, task_id: int, result: str, **kwargs) -> None:
    """deliveries.signals.delivery_finished: keep the outcome for the dashboard."""
    delivery_outcome_record(tenant_id=tenant_id, task_id=task_id, result=result)


def scan_finished_received(sender, *, results: list, totals: dict[str, int], dry_run: bool, **kwargs) -> None:
    """deliveries.signals.scan_finished: keep the run for the dashboard."""
    scan_record(results=results, totals=totals, dry_run=dry_run)


def approval_refused_received(sender, *, task, message: str, **kwargs) -> None:
    """deliveries.signals.approval_refused: keep the refusal and its reason for the dashboard."""
    refusal_record(task=task, message=message)


def _outcomes_expired(now: datetime):
    return DeliveryOutcome.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS"))


# The retention policy (core/retention.py): outcomes are part of the audit trail.
RETENTION_RULES = (RetentionRule(DeliveryOutcome._meta.db_table, _outcomes_expired),)

"""Records the dashboard reads: how deliveries ended, what the last scan found. Written on
the lower layers' signals (`deliveries.signals.delivery_finished`,
`deliveries.signals.scan_finished`), connected in ConsoleConfig.ready."""

from __future__ import annotations

from datetime import datetime

from console.models import DeliveryOutcome, ScanRun
from core.retention import RetentionRule, days_ago

# `delivery_run`'s final results (deliveries.delivery); anything else is not an end
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


def scan_record(*, results: list, totals: dict[str, int], dry_run: bool) -> ScanRun:
    """`results`: deliveries.scan.ScanResult per tenant."""
    return ScanRun.objects.create(dry_run=dry_run, totals=totals, results=[r.to_json() for r in results])


def delivery_finished_received(sender, *, tenant_id: int, task_id: int, result: str, **kwargs) -> None:
    """deliveries.signals.delivery_finished: keep the outcome for the dashboard."""
    delivery_outcome_record(tenant_id=tenant_id, task_id=task_id, result=result)


def scan_finished_received(sender, *, results: list, totals: dict[str, int], dry_run: bool, **kwargs) -> None:
    """deliveries.signals.scan_finished: keep the run for the dashboard."""
    scan_record(results=results, totals=totals, dry_run=dry_run)


def _outcomes_expired(now: datetime):
    return DeliveryOutcome.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS"))


# The retention policy (core/retention.py): outcomes are part of the audit trail.
RETENTION_RULES = (RetentionRule(DeliveryOutcome._meta.db_table, _outcomes_expired),)

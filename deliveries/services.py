"""Workflows over schedules: upsert and delete by the schedule's unique name."""

from __future__ import annotations

from datetime import datetime

from core.models import Tenant
from deliveries.models import ContentTask, DeliverySchedule


def schedule_upsert(*, task: ContentTask, due_at: datetime, reason: str) -> DeliverySchedule:
    """Create or replace the task's schedule (seed 000: create or replace by name)."""
    schedule, _ = DeliverySchedule.objects.update_or_create(
        name=DeliverySchedule.name_for(task.tenant, task.issue_key),
        defaults={
            "tenant": task.tenant,
            "task": task,
            "due_at": due_at,
            "reason": reason,
            "lease_until": None,
            "claimed_by": "",
            "attempts": 0,
            "last_error": "",
        },
    )
    return schedule


def schedule_delete(*, task: ContentTask) -> bool:
    deleted, _ = DeliverySchedule.objects.filter(task=task).delete()
    return deleted > 0


def tenant_webhook_urls(*, tenant: Tenant, base_url: str) -> dict[str, str]:
    """The absolute URLs to configure in Backlog and in the LINE console."""
    base = base_url.rstrip("/")
    return {
        "backlog_webhook_url": f"{base}/hooks/backlog/{tenant.slug}/{tenant.webhook_token}",
        "line_webhook_url": f"{base}/hooks/line/{tenant.slug}",
    }

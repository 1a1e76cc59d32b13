"""Workflows over schedules: upsert and delete by the schedule's unique name."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F

from core.models import Tenant
from deliveries.issues import IssueState
from deliveries.models import ContentTask, DeliverySchedule

# seed 000: a delivery is scheduled at(max(投稿日時, now+5s)); "send now" is at(now+5s),
# through the same scheduler.
MIN_LEAD = timedelta(seconds=5)


def schedule_due_at(*, publish_at: datetime | None, now: datetime) -> datetime:
    """When a delivery asked for `publish_at` (None: now) is due: never sooner than MIN_LEAD."""
    return max(publish_at or now, now + MIN_LEAD)


def publish_passed(*, publish_at: datetime | None, due_at: datetime, now: datetime) -> bool:
    """Whether an approval's 投稿日時 had passed and the schedule sends it at once (now + MIN_LEAD):
    the comment and the admin say so. A passed time the quiet hours deferred is not sent at once."""
    return publish_at is not None and publish_at < now and due_at <= now + MIN_LEAD


def prepare_from(due_at: datetime) -> datetime:
    """When a send due at `due_at` is first prepared (a time already past: at once): every
    registration sets it, and the prepare step (deliveries/prepare/ahead.py) takes it from there."""
    return due_at - timedelta(seconds=settings.DELIVERY_PREPARE_SECONDS)


def schedule_upsert(*, task: ContentTask, due_at: datetime, reason: str) -> DeliverySchedule:
    """Create or replace the task's schedule (seed 000: create or replace by name)."""
    schedule, _ = DeliverySchedule.objects.update_or_create(
        name=DeliverySchedule.name_for(task.tenant, task.issue_key),
        defaults={
            "tenant": task.tenant,
            "task": task,
            "due_at": due_at,
            "reason": reason,
            **DeliverySchedule.LEASE.freed(),
            "attempts": 0,
            "last_error": "",
            "backlog_failing_since": None,
            "prepare_at": prepare_from(due_at),  # what was prepared for an earlier registration goes
            "prepared": {},
        },
    )
    return schedule


def approval_record(
    *, task: ContentTask, state: IssueState, now: datetime, override: dict | None = None
) -> None:
    """Record what was approved: the body, time and template a later change is compared
    with (seed 001), and a new approval number. `override`: a `/automedia send`'s values."""
    ContentTask.objects.filter(pk=task.pk).update(
        approval_seq=F("approval_seq") + 1, **approval_fields(state=state, now=now, override=override)
    )


def approval_fields(*, state: IssueState, now: datetime, override: dict | None = None) -> dict:
    """approval_record's columns but the approval number (a new task's first is 1)."""
    return {
        "approved_at": now,
        "approval_fingerprint": state.fingerprint,
        "approved_publish_at": state.parsed.publish_at,
        "approved_template_ref": str(state.parsed.template or ""),
        "command_override": override or {},
    }


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

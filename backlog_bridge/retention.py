"""What the retention policy removes of Backlog's records (core/retention.py): processed
webhook events received RETENTION_EVENTS_DAYS ago (the catch-up's cursor is the tenant's
`last_activity_id`, not these rows), comment commands and AI reviews after
RETENTION_AUDIT_DAYS. Pending and failed events are never removed."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.models import AIReview, BacklogEvent, CommandRun
from core.retention import RetentionRule, days_ago


def _events(now: datetime):
    return BacklogEvent.objects.filter(
        outcome__in=BacklogEvent.SETTLED, received_at__lt=days_ago(now, "RETENTION_EVENTS_DAYS")
    )


def _commands(now: datetime):
    return CommandRun.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS"))


def _reviews(now: datetime):
    return AIReview.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS"))


RULES = (
    RetentionRule(BacklogEvent._meta.db_table, _events),
    RetentionRule(CommandRun._meta.db_table, _commands),
    RetentionRule(AIReview._meta.db_table, _reviews),
)

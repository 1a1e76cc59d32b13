"""What the retention policy removes of the group posts' records (core/retention.py): post
attempts go after RETENTION_AUDIT_DAYS, except those of a post still open or failed."""

from __future__ import annotations

from datetime import datetime

from core.retention import RetentionRule, days_ago
from linepush.models import LinePushAttempt, LinePushItem


def _attempts_expired(now: datetime):
    kept = [*LinePushItem.OPEN, LinePushItem.Status.FAILED]
    return LinePushAttempt.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS")).exclude(
        item__status__in=kept
    )


RULES = (RetentionRule(LinePushAttempt._meta.db_table, _attempts_expired),)

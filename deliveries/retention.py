"""What the retention policy removes of the delivery records (core/retention.py): the
attempts, after RETENTION_AUDIT_DAYS, except those of a task whose delivery is still
open (a schedule row), which its run reads to tell what was already sent."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Exists, OuterRef

from core.retention import RetentionRule, days_ago
from deliveries.models import DeliveryAttempt, DeliverySchedule


def _attempts(now: datetime):
    open_work = DeliverySchedule.objects.filter(task_id=OuterRef("task_id"))
    return DeliveryAttempt.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS")).exclude(
        Exists(open_work)
    )


RULES = (RetentionRule(DeliveryAttempt._meta.db_table, _attempts),)

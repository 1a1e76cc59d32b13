"""What the retention policy removes of the delivery records (core/retention.py): the
attempts, after RETENTION_AUDIT_DAYS, except those of a task whose delivery is still
open (a schedule row), which its run reads to tell what was already sent; a LINE
narrowcast's user ids, RETENTION_EVENTS_DAYS after its last step (a narrowcast gives up
within a day), where deleting its audience did not drop them already."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Exists, OuterRef

from core.retention import RetentionRule, days_ago
from deliveries.channels.models import ChannelPost
from deliveries.models import DeliveryAttempt, DeliverySchedule


def _attempts(now: datetime):
    open_work = DeliverySchedule.objects.filter(task_id=OuterRef("task_id"))
    return DeliveryAttempt.objects.filter(created_at__lt=days_ago(now, "RETENTION_AUDIT_DAYS")).exclude(
        Exists(open_work)
    )


def _audience_lists(now: datetime):
    return ChannelPost.objects.filter(
        channel="line", details__has_key="users", updated_at__lt=days_ago(now, "RETENTION_EVENTS_DAYS")
    ).exclude(details__users=[])


def _users_drop(post: ChannelPost) -> list[str]:
    post.details = ChannelPost.users_dropped(post.details)
    return ["details"]


RULES = (
    RetentionRule(DeliveryAttempt._meta.db_table, _attempts),
    RetentionRule(ChannelPost._meta.db_table, _audience_lists, _users_drop, "user ids dropped"),
)

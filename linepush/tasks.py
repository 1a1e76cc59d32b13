"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

from django.utils import timezone

from core.due import handed

# The LINE webhook's tasks are line's (line/tasks.py): those queued before they moved name
# these paths.
from line.tasks import process_line_event, process_line_events, retry_line_events  # noqa: F401
from linepush.models import LinePushItem
from linepush.producers import digests_produce, escalations_produce, reminders_produce
from linepush.push import PUSH_LEASE
from linepush.sending import push_send as _push_send
from linepush.services import quota_check_all


@handed(LinePushItem, PUSH_LEASE)
def push_send(item_ids: list[int], token: str, near_quota: bool = True) -> dict[str, int]:
    # A task queued before `near_quota` was passed checks the quota, as it did then.
    return _push_send(item_ids=item_ids, token=token, near_quota=near_quota)


def reminders_hourly() -> int:
    return reminders_produce(now=timezone.now())


def escalations_daily() -> int:
    return escalations_produce(now=timezone.now())


def morning_digest_hourly() -> int:
    """Hourly; each tenant gets its digest queued for 08:00 of its own time zone."""
    return digests_produce(now=timezone.now())


def quota_check_daily() -> dict[str, str]:
    return quota_check_all()

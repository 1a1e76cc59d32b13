"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

from django.utils import timezone

from core.due import handed
from linepush.events import line_event_process, line_events_drain, line_events_retry
from linepush.models import LinePushItem
from linepush.producers import digests_produce, escalations_produce, reminders_produce
from linepush.push import PUSH_LEASE
from linepush.sending import push_send as _push_send
from linepush.services import quota_check_all


@handed(LinePushItem, PUSH_LEASE)
def push_send(item_ids: list[int], token: str, near_quota: bool = True) -> dict[str, int]:
    # A task queued before `near_quota` was passed checks the quota, as it did then.
    return _push_send(item_ids=item_ids, token=token, near_quota=near_quota)


def process_line_event(event_id: int) -> str:
    return line_event_process(event_id=event_id)


def process_line_events() -> int:
    """Every due LINE event (run_scheduler's stranded-events step enqueues this)."""
    return line_events_drain()


def retry_line_events() -> int:
    """Every 5 minutes: accepted LINE events the broker lost, or that failed, run again."""
    return line_events_retry()


def reminders_hourly() -> int:
    return reminders_produce(now=timezone.now())


def escalations_daily() -> int:
    return escalations_produce(now=timezone.now())


def morning_digest_hourly() -> int:
    """Hourly; each tenant gets its digest queued for 08:00 of its own time zone."""
    return digests_produce(now=timezone.now())


def quota_check_daily() -> dict[str, str]:
    return quota_check_all()

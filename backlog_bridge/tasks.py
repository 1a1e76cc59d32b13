"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

import logging

from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.events import event_process, events_drain
from backlog_bridge.services import catchup_run, pending_events_retry
from core.models import Tenant

logger = logging.getLogger(__name__)


def process_events() -> int:
    """Every due webhook event, in arrival order (the webhook view enqueues this)."""
    return events_drain()


def process_event(event_id: int) -> str:
    """One event (the task of earlier versions; rows already queued may still name it)."""
    return event_process(event_id=event_id)


def catchup_all() -> dict[str, int]:
    """Every 5 minutes: recover missed webhooks, then re-run accepted events still pending."""
    recovered: dict[str, int] = {}
    for tenant in Tenant.objects.filter(is_active=True):
        try:
            # A first run lists the whole project: paced, it waits for Backlog's rate-limit
            # reset instead of drawing a 429 and starting over five minutes later.
            with BacklogClient.for_tenant(tenant, paced=tenant.last_activity_id is None) as client:
                recovered[tenant.slug] = catchup_run(tenant=tenant, client=client)
        except BacklogError as exc:
            logger.warning("catch-up for %s failed: %s", tenant.slug, exc)
    recovered["_retried"] = pending_events_retry()
    return recovered

"""Backlog activities in: the webhook (seed 000) and the catch-up of missed ones.

Webhooks are hints: the delivery lifecycle re-reads the issue from the API for every
decision, so an event that arrives twice, late, or because automedia itself changed
the issue never acts twice.
"""

from __future__ import annotations

from datetime import timedelta

from backlog_bridge.activities import activity_handled, webhook_validate
from backlog_bridge.client import BacklogClient
from backlog_bridge.events import BACKLOG_EVENTS, activity_store, event_process, events_drain_soon
from core.models import Tenant


def webhook_accept(*, tenant: Tenant, payload: object, stored_token: str | None = None) -> str:
    """Validate, store and hand to a drain; returns "accepted", "duplicate" or "ignored".

    The stored event row is the queue: one INSERT (autocommit) is all a webhook
    writes. Processing is a django-q2 drain task that takes every pending event.
    With `stored_token`, "duplicate" also means the tenant no longer holds that token.
    """
    activity = webhook_validate(tenant=tenant, payload=payload)
    if activity_store(tenant=tenant, activity=activity, source="webhook", stored_token=stored_token) is None:
        return "duplicate"
    if not activity_handled(activity):
        return "ignored"
    events_drain_soon()
    return "accepted"


# -- catch-up (missed webhooks) ----------------------------------------------------


def catchup_run(*, tenant: Tenant, client: BacklogClient) -> int:
    """Store and process project activities after the tenant's cursor; returns how many were new."""
    cursor = tenant.last_activity_id
    if cursor is None:
        # First run: start from now; the daily scan covers anything older.
        latest = client.activities(tenant.backlog_project_key, min_id=None, latest=True)
        Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=latest[0]["id"] if latest else 0)
        return 0
    new = 0
    while page := client.activities(tenant.backlog_project_key, min_id=cursor):
        for activity in page:
            event_id = activity_store(tenant=tenant, activity=activity, source="catchup")
            if event_id is not None and activity_handled(activity):
                new += 1
                event_process(event_id=event_id, client=client)
        cursor = max(a["id"] for a in page)
        Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=cursor)
    return new


def pending_events_retry(*, older_than: timedelta = timedelta(minutes=1)) -> int:
    """The catch-up job's sweep (core/intake.py): events whose task the broker lost or whose
    retry is due run again; one whose attempts ran out with no outcome ends rejected."""
    return BACKLOG_EVENTS.sweep(older_than=older_than)

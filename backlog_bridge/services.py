"""Backlog activities in: the webhook (seed 000) and the catch-up of missed ones.

Webhooks are hints: the delivery lifecycle re-reads the issue from the API for every
decision, so an event that arrives twice, late, or because automedia itself changed
the issue never acts twice.
"""

from __future__ import annotations

from datetime import timedelta

from backlog_bridge.activities import activity_handled, webhook_validate
from backlog_bridge.client import MAX_PAGE, BacklogClient
from backlog_bridge.events import (
    BACKLOG_EVENTS,
    activity_event,
    activity_store,
    event_process,
    webhook_token_held,
)
from backlog_bridge.signals import issues_listed
from core.models import Tenant


def webhook_accept(*, tenant: Tenant, payload: object, stored_token: str | None = None) -> str:
    """Validate, store and hand to a drain; returns "accepted", "duplicate" or "ignored".

    The stored event row is the queue: one INSERT (autocommit) is all a webhook writes.
    Processing is a django-q2 drain task that takes every pending event (core/intake.py).
    With `stored_token`, "duplicate" also means the tenant no longer holds that token.
    """
    activity = webhook_validate(tenant=tenant, payload=payload)
    event = activity_event(tenant=tenant, activity=activity, source="webhook")
    held = None if stored_token is None else webhook_token_held(tenant, stored_token)
    with BACKLOG_EVENTS.receiving() as received:
        if not received.store(event, held=held):
            return "duplicate"
    return "accepted" if activity_handled(activity) else "ignored"


# -- catch-up (missed webhooks) ----------------------------------------------------


def catchup_run(*, tenant: Tenant, client: BacklogClient) -> int:
    """Store and process project activities after the tenant's cursor; returns how many were new.

    The first run (no cursor) registers the issues the project already has instead: their
    activities lie before the cursor, and an issue made while automedia was not yet
    listening (the demo's, a project's backlog) must show in the admin all the same."""
    cursor = tenant.last_activity_id
    if cursor is None:
        return _catchup_first_run(tenant=tenant, client=client)
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


def _catchup_first_run(*, tenant: Tenant, client: BacklogClient) -> int:
    """Every issue of the project, page by page, handed to `issues_listed`; then the cursor.

    The latest activity is read first: what happens while the issues are listed comes after
    it and is caught by the next run. The cursor is written last, so a run that fails midway
    starts over (registering an issue twice changes nothing)."""
    latest = client.activities(tenant.backlog_project_key, min_id=None, latest=True)
    project_id = client.project(tenant.backlog_project_key)["id"]
    listed, page = 0, []
    for issue in client.iter_issues(project_id=project_id):
        page.append(issue)
        if len(page) == MAX_PAGE:
            listed += _issues_hand_over(tenant, client, page)
            page = []
    listed += _issues_hand_over(tenant, client, page)
    Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=latest[0]["id"] if latest else 0)
    return listed


def _issues_hand_over(tenant: Tenant, client: BacklogClient, issues: list[dict]) -> int:
    if not issues:
        return 0
    answers = issues_listed.send(sender=Tenant, tenant=tenant, client=client, issues=issues)
    return max((count for _, count in answers), default=0)


def pending_events_retry(*, older_than: timedelta = timedelta(minutes=1)) -> int:
    """The catch-up job's sweep (core/intake.py): events whose task the broker lost or whose
    retry is due run again; one whose attempts ran out with no outcome ends rejected."""
    return BACKLOG_EVENTS.sweep(older_than=older_than)

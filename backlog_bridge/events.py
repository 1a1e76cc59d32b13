"""The Backlog event store: raw activities stored once, then drained under a claim by the
shared intake (core/intake.py, `BACKLOG_EVENTS`).

Each stored event is checked again and handed to the handler registered for its activity
type (`event_handlers_register`, called by the delivery lifecycle's AppConfig.ready):
this adapter decides nothing about deliveries itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.conf import settings

from backlog_bridge.activities import (
    ISSUE_KEY_MAX,
    PayloadError,
    activity_handled,
    handled_activity_check,
    issue_key_of,
    names_many,
    value_shown,
)
from backlog_bridge.client import BacklogClient, BacklogError, InvalidIdentifier, shared_client
from backlog_bridge.models import BacklogEvent
from backlog_bridge.statuses import BacklogConfigError
from core.intake import EventIgnored, EventIntake, EventRejected
from core.models import Tenant
from core.statements import Held

EventHandler = Callable[[BacklogEvent, BacklogClient], str]
"""Acts on one stored, checked event; returns what was done (the event's detail)."""

EVENT_HANDLERS: dict[int, EventHandler] = {}


class EventRetry(Exception):
    """A handler could not finish now (e.g. a concurrent change): the event fails and is retried."""


def event_handlers_register(handlers: dict[int, EventHandler]) -> None:
    """Called from an AppConfig.ready: which function acts on each activity type."""
    EVENT_HANDLERS.update(handlers)


def activity_event(*, tenant: Tenant, activity: dict, source: str) -> BacklogEvent:
    """The row a received activity is stored as (`BACKLOG_EVENTS.store`): pending when its
    type is handled, ignored otherwise."""
    handled = activity_handled(activity)
    return BacklogEvent(
        tenant=tenant,
        activity_id=activity["id"],
        type=activity["type"],
        issue_key=issue_key_of(tenant, activity.get("content"))[:ISSUE_KEY_MAX],  # checked before use
        payload=activity,
        source=source,
        outcome=BacklogEvent.Outcome.PENDING if handled else BacklogEvent.Outcome.IGNORED,
    )


def activity_store(*, tenant: Tenant, activity: dict, source: str) -> int | None:
    """Store a raw activity once per (tenant, activity id): the new row's id, or None when
    it was stored before (a duplicate)."""
    event = activity_event(tenant=tenant, activity=activity, source=source)
    return event.pk if BACKLOG_EVENTS.store(event) else None


def webhook_token_held(tenant: Tenant, stored_token: str) -> Held:
    """The tenant's row while it is active and holds the webhook token its receiver read
    (as stored, encrypted), maybe minutes ago: a rotation writes a new ciphertext, so an
    event that comes with an old token is not stored (checked in the event's INSERT)."""
    return Held(Tenant, {"id": tenant.pk, "is_active": True, "webhook_token": stored_token})


def _handle(event: BacklogEvent, client: BacklogClient | None = None) -> str:
    """The intake's handler: the event's checks, then the handler of its activity type,
    with the worker's kept-alive client for the tenant unless the caller brings one."""
    try:
        return _route(event, client or shared_client(event.tenant))
    except InvalidIdentifier as exc:  # nothing was sent: the event cannot be used
        raise EventRejected(str(exc)) from exc


BACKLOG_EVENTS = EventIntake(
    model=BacklogEvent,
    handle=_handle,
    drain_task="backlog_bridge.tasks.process_events",
    name="backlog event",
    expected=(BacklogError, BacklogConfigError, EventRetry),
    drain_window=lambda: settings.BACKLOG_EVENT_BATCH_SECONDS,  # a burst's webhooks share a drain
)


def events_drain(*, budget: float | None = None) -> int:
    """Every due event, in arrival order (the drain task the webhook view enqueues)."""
    return BACKLOG_EVENTS.drain(budget=budget)


def events_stranded_step(*, now: datetime, limit: int) -> bool:
    """run_scheduler's step (registered by deliveries' ready): drains what no drain took."""
    return BACKLOG_EVENTS.stranded_step(now=now, limit=limit)


def event_process(*, event_id: int, client: BacklogClient | None = None, tenant: Tenant | None = None) -> str:
    """Process one stored event under a claim (core/intake.py); `client`: the caller's
    (the catch-up's), `tenant`: the event's when the caller has it loaded."""
    return BACKLOG_EVENTS.process(event_id=event_id, tenant=tenant, client=client)


def _route(event: BacklogEvent, client: BacklogClient) -> str:
    _stored_event_check(event)
    handler = EVENT_HANDLERS.get(event.type)
    if handler is None:
        raise EventIgnored(f"no handler for activity type {event.type}")
    return handler(event, client)


def _stored_event_check(event: BacklogEvent) -> None:
    """The receiver's checks again: an event stored before they existed (or taken by the
    catch-up) must not reach a handler in a shape it cannot read, nor put a payload's
    text into a URL."""
    if not isinstance(event.payload, dict):
        raise EventRejected("invalid payload: activity must be an object")
    try:
        handled_activity_check(tenant=event.tenant, activity={**event.payload, "type": event.type})
    except PayloadError as exc:
        raise EventRejected(f"invalid payload: {exc}") from exc
    if not names_many({**event.payload, "type": event.type}) and event.issue_key != issue_key_of(
        event.tenant, event.payload["content"]
    ):
        raise EventRejected(
            f"invalid payload: stored issue key {value_shown(event.issue_key)} does not match"
        )

"""The Backlog event store: raw activities stored once, then drained under a claim by the
shared intake (core/intake.py, `BACKLOG_EVENTS`).

Each stored event is checked again and handed to the handler registered for its activity
type (`event_handlers_register`, called by the delivery lifecycle's AppConfig.ready):
this adapter decides nothing about deliveries itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

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

EventHandler = Callable[[BacklogEvent, BacklogClient], str]
"""Acts on one stored, checked event; returns what was done (the event's detail)."""

EVENT_HANDLERS: dict[int, EventHandler] = {}


class EventRetry(Exception):
    """A handler could not finish now (e.g. a concurrent change): the event fails and is retried."""


def event_handlers_register(handlers: dict[int, EventHandler]) -> None:
    """Called from an AppConfig.ready: which function acts on each activity type."""
    EVENT_HANDLERS.update(handlers)


_EVENT_COLUMNS = (
    "tenant_id, activity_id, type, issue_key, payload, source, outcome, detail, attempts, received_at"
)
_INSERT_EVENT = (
    "INSERT INTO {table} (" + _EVENT_COLUMNS + ") VALUES (%s, %s, %s, %s, %s, %s, %s, '', 0, %s)"
    " ON CONFLICT (tenant_id, activity_id) DO NOTHING RETURNING id"
)
# The webhook's: the tenant row must still be active and hold the webhook token (as stored,
# encrypted) the receiver checked, read maybe minutes ago. A rotation writes a new
# ciphertext, so an old token stores nothing, in the same single statement.
_INSERT_WEBHOOK_EVENT = (
    "INSERT INTO {table} (" + _EVENT_COLUMNS + ") SELECT %s, %s, %s, %s, %s, %s, %s, '', 0, %s"
    " FROM {tenants} WHERE id = %s AND is_active AND webhook_token = %s"
    " ON CONFLICT (tenant_id, activity_id) DO NOTHING RETURNING id"
)


def activity_store(
    *, tenant: Tenant, activity: dict, source: str, stored_token: str | None = None
) -> int | None:
    """Store a raw activity once per (tenant, activity id): the new row's id, or None
    when it was stored before (a duplicate) or, given `stored_token` (the webhook token's
    column as the receiver read it), when the tenant no longer holds it.

    One `INSERT … ON CONFLICT DO NOTHING RETURNING` (SQLite ≥ 3.35 and PostgreSQL): no
    read before, and no savepoint, on the webhook's hot path.
    """
    outcome = BacklogEvent.Outcome.PENDING if activity_handled(activity) else BacklogEvent.Outcome.IGNORED
    field = BacklogEvent._meta.get_field
    params = [
        tenant.pk,
        activity["id"],
        activity["type"],
        issue_key_of(tenant, activity.get("content"))[:ISSUE_KEY_MAX],  # checked before use
        field("payload").get_db_prep_save(activity, connection),
        source,
        outcome,
        field("received_at").get_db_prep_save(timezone.now(), connection),
    ]
    table = BacklogEvent._meta.db_table
    if stored_token is None:
        row = _insert_event(_INSERT_EVENT.format(table=table), params)
    else:
        sql = _INSERT_WEBHOOK_EVENT.format(table=table, tenants=Tenant._meta.db_table)
        row = _insert_event(sql, [*params, tenant.pk, stored_token])
    return None if row is None else row[0]


def _insert_event(sql: str, params: list) -> tuple | None:
    """Run the event INSERT without Django's health-check round trip before it.

    With CONN_HEALTH_CHECKS, a request's first query is preceded by a `SELECT 1` that
    checks the kept-alive connection: a whole round trip, about a third of a webhook's
    database time on PostgreSQL. The INSERT is idempotent (ON CONFLICT DO NOTHING), so
    outside a transaction it goes first and, if the connection proves dead, is sent
    once more on a new one. Any other database error is raised as it is.
    """
    if connection.in_atomic_block:
        return _fetchone(sql, params)  # a transaction's connection cannot be replaced
    connection.health_check_done = True
    try:
        return _fetchone(sql, params)
    except (InterfaceError, OperationalError):
        if connection.is_usable():
            raise
        connection.close()
    return _fetchone(sql, params)


def _fetchone(sql: str, params: list) -> tuple | None:
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    # PostgreSQL: a prepared statement with server-side parameters. PostgreSQL parses
    # and plans the INSERT once per connection, and the payload travels as a parameter
    # instead of an escaped literal (Django's cursors bind on the client). This psycopg
    # cursor bypasses Django's query log, not its error translation.
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchone()


_drain_requested_at = float("-inf")  # time.monotonic() of this process's last drain enqueue


def events_drain_soon() -> bool:
    """Enqueue a drain task, at most one per BACKLOG_EVENT_BATCH_SECONDS per process.

    A drain takes every pending event, so during a burst one task per window is
    enough. An event stored just after a drain's last look, with no webhook after it
    to enqueue the next drain, is taken by the stranded-events step (run_scheduler,
    after core.intake.STRANDED_AFTER) and, failing that, by the catch-up job's sweep.
    """
    global _drain_requested_at
    now = time.monotonic()
    if now - _drain_requested_at < settings.BACKLOG_EVENT_BATCH_SECONDS:
        return False
    _drain_requested_at = now
    BACKLOG_EVENTS.drain_enqueue()
    return True


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

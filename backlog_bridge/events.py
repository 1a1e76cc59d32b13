"""The Backlog event store: raw activities stored once, then drained under a claim.

Each stored event is handed to the handler registered for its activity type
(`event_handlers_register`, called by the delivery lifecycle's AppConfig.ready):
this adapter decides nothing about deliveries itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F
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
from core.due import Lease, claim_one
from core.keeper import held_claim, keeper
from core.models import Tenant
from core.retry import max_attempts

logger = logging.getLogger(__name__)

MAX_EVENT_ATTEMPTS = max_attempts("webhook_event")


def _event_lease() -> timedelta:
    """How long a drain holds an event it is processing, renewed by its keeper meanwhile."""
    return timedelta(seconds=settings.EVENT_LEASE_SECONDS)


EVENT_CLAIM = Lease(length=_event_lease, until="claimed_until", owner=None)
EVENT_BATCH = 50  # events read per round of a drain
DRAIN_BUDGET_SECONDS = 60.0  # a drain hands what is left to a new drain after this long
STRANDED_AFTER = timedelta(seconds=2)  # run_scheduler drains events pending this long

EventHandler = Callable[[BacklogEvent, BacklogClient], str]
"""Acts on one stored, checked event; returns what was done (the event's detail)."""

EVENT_HANDLERS: dict[int, EventHandler] = {}


class EventIgnored(Exception):
    """Nothing to act on (e.g. the comment is gone from Backlog): the event ends `ignored`."""


class EventRejected(Exception):
    """The event cannot be used (a malformed payload, an identifier Backlog's answer
    contradicts): it ends `rejected` with this reason, never retried."""


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
    to enqueue the next drain, is taken by `events_stranded_drain` (run_scheduler,
    after STRANDED_AFTER) and, failing that, by the catch-up job's retry.
    """
    global _drain_requested_at
    now = time.monotonic()
    if now - _drain_requested_at < settings.BACKLOG_EVENT_BATCH_SECONDS:
        return False
    _drain_requested_at = now
    _drain_enqueue()
    return True


def _drain_enqueue() -> None:
    from django_q.tasks import async_task

    enqueue = lambda: async_task("backlog_bridge.tasks.process_events")  # noqa: E731
    if settings.REDIS_URL:
        transaction.on_commit(enqueue)  # Redis is outside any transaction the caller holds
    else:
        enqueue()  # the ORM broker's row commits (or not) with the caller's transaction


def _claimable(now: datetime):
    return BacklogEvent.objects.filter(
        EVENT_CLAIM.free(now),
        outcome=BacklogEvent.Outcome.PENDING,
        attempts__lt=MAX_EVENT_ATTEMPTS,
    )


def events_drain(*, budget: float = DRAIN_BUDGET_SECONDS) -> int:
    """Process pending events in arrival order until none is left; returns how many.

    Several drains may run at once: each event is claimed by `event_process`, so
    they share the work. The worker's kept-alive Backlog client per tenant serves them. After `budget` seconds the rest goes to a new drain,
    so a long burst never holds one worker past the task timeout.
    """
    deadline = time.monotonic() + budget
    processed = 0
    while batch := list(
        _claimable(timezone.now()).order_by("pk").values_list("pk", "tenant_id")[:EVENT_BATCH]
    ):
        tenants = Tenant.objects.in_bulk({tenant_id for _, tenant_id in batch})
        for event_id, tenant_id in batch:
            if _drain_one(event_id, tenants[tenant_id]):
                processed += 1
        if time.monotonic() > deadline:
            _drain_enqueue()
            break
    return processed


def _drain_one(event_id: int, tenant: Tenant) -> bool:
    """One event of a drain; an unexpected error fails that event, not the drain."""
    try:
        result = event_process(event_id=event_id, client=shared_client(tenant), tenant=tenant)
        return result != CLAIMED_ELSEWHERE
    except Exception as exc:
        logger.exception("backlog event %s failed", event_id)
        BacklogEvent.objects.filter(pk=event_id).update(
            **BacklogEvent.finished(
                outcome=BacklogEvent.Outcome.FAILED, detail=f"{type(exc).__name__}: {exc}"
            )
        )
        return True


_stranded_checked_at = float("-inf")


def events_stranded_drain(*, now: datetime) -> bool:
    """run_scheduler's look (at most every STRANDED_AFTER) for events no drain took:
    enqueue one when an event has been pending longer than STRANDED_AFTER."""
    global _stranded_checked_at
    tick = time.monotonic()
    if tick - _stranded_checked_at < STRANDED_AFTER.total_seconds():
        return False
    _stranded_checked_at = tick
    if not _claimable(now).filter(received_at__lte=now - STRANDED_AFTER).exists():
        return False
    _drain_enqueue()
    return True


def events_stranded_step(*, now: datetime, limit: int) -> bool:
    """run_scheduler's step (registered by deliveries' ready): False even when it enqueued a
    drain, since the drain does the work and the loop has nothing more to claim for it."""
    events_stranded_drain(now=now)
    return False


CLAIMED_ELSEWHERE = "claimed elsewhere"


def event_process(*, event_id: int, client: BacklogClient | None = None, tenant: Tenant | None = None) -> str:
    """Process one stored event (pending, or failed and retried) under a claim: the
    conditional UPDATE must hit the row, so two workers never process it at once.
    `tenant`: the event's tenant when the caller has it loaded (a drain)."""
    now = timezone.now()
    retryable = BacklogEvent.objects.filter(
        outcome__in=[BacklogEvent.Outcome.PENDING, BacklogEvent.Outcome.FAILED]
    )
    claimed = claim_one(retryable, pk=event_id, now=now, lease=EVENT_CLAIM, attempts=F("attempts") + 1)
    if tenant is None:
        event = BacklogEvent.objects.select_related("tenant").get(pk=event_id)
    else:
        event = BacklogEvent.objects.get(pk=event_id, tenant=tenant)
        event.tenant = tenant  # no join, no second decryption of its secrets
    if not claimed:
        return event.outcome if event.is_settled() else CLAIMED_ELSEWHERE
    own_client = client is None
    client = client or BacklogClient.for_tenant(event.tenant)
    try:
        with keeper.keeping(held_claim(BacklogEvent, pk=event_id, lease=EVENT_CLAIM, now=now)):
            return _process_claimed(event, client)
    finally:
        if own_client:
            client.close()


def _process_claimed(event: BacklogEvent, client: BacklogClient) -> str:
    """Run the claimed event's handler and record how it ended."""
    last_attempt = event.attempts + 1 >= MAX_EVENT_ATTEMPTS  # the claim counted this one
    try:
        detail = _route(event, client)
    except EventIgnored as exc:  # nothing will ever come of it: not retried, no error
        return _event_finish(event, BacklogEvent.Outcome.IGNORED, str(exc))
    except (EventRejected, InvalidIdentifier) as exc:
        return _event_finish(event, BacklogEvent.Outcome.REJECTED, str(exc))
    except (BacklogError, BacklogConfigError, EventRetry) as exc:
        level = logging.ERROR if last_attempt else logging.WARNING
        logger.log(level, "backlog event %s failed: %s", event, exc)
        return _event_failed(event, exc, last_attempt)
    except Exception as exc:  # a bug or a shape no check foresaw: this event, not the drain
        logger.exception("backlog event %s failed", event.pk)
        return _event_failed(event, exc, last_attempt)
    return _event_finish(event, BacklogEvent.Outcome.DONE, detail)


def _event_failed(event: BacklogEvent, exc: Exception, last_attempt: bool) -> str:
    """Failed, to be retried; or, on the last attempt, rejected with the reason."""
    expected = isinstance(exc, BacklogError | BacklogConfigError | EventRetry)
    reason = str(exc) if expected else f"{type(exc).__name__}: {exc}"
    if last_attempt:
        return _event_finish(
            event, BacklogEvent.Outcome.REJECTED, f"gave up after {MAX_EVENT_ATTEMPTS} attempts: {reason}"
        )
    return _event_finish(event, BacklogEvent.Outcome.FAILED, reason)


def _event_finish(event: BacklogEvent, outcome: str, detail: str) -> str:
    BacklogEvent.objects.filter(pk=event.pk).update(**BacklogEvent.finished(outcome=outcome, detail=detail))
    return outcome


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

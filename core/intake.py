"""One intake for stored webhook events (`core.records.StoredWebhookEvent` with a `tenant`):
each app configures an `EventIntake` with its model, handler and drain task, and gets the
store (once per the model's unique constraint), the drain's enqueue after a request, the
claim, the drain, the stranded-events step and the give-up from here.

The drain rule: an event is due when it is not settled (pending or failed), has attempts
left and is free: never taken, its worker's hold ran out, or the time of its retry came.
A failed attempt waits on the "webhook_event" ladder (core/retry.py), kept in the hold's
column, and the last one ends rejected. So an accepted event is never lost: a drain, the
stranded step or the recurring sweep takes it again until it ends.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django_q import tasks as broker_tasks

from core.due import claim_one
from core.keeper import held_claim, keeper
from core.models import Tenant
from core.records import StoredWebhookEvent
from core.retry import max_attempts, next_retry_at
from core.statements import Held, row_insert_new

logger = logging.getLogger(__name__)

CLAIMED_ELSEWHERE = "claimed elsewhere"
MAX_EVENT_ATTEMPTS = max_attempts("webhook_event")
STRANDED_AFTER = timedelta(seconds=2)  # the stranded step drains events due this long
UNSETTLED = (StoredWebhookEvent.Outcome.PENDING, StoredWebhookEvent.Outcome.FAILED)
EVENT_CLAIM = StoredWebhookEvent.CLAIM

Handle = Callable[..., str]
"""Acts on one claimed event (`handle(event, **context)`); returns what was done (the detail)."""


class EventIgnored(Exception):
    """Nothing to act on (e.g. the comment is gone): the event ends `ignored`."""


class EventRejected(Exception):
    """The event cannot be used (a malformed payload, an identifier out of format): it ends
    `rejected` with this reason, never retried."""


class EventIntake:
    """The processing side of one app's stored events.

    `expected`: failures the handler reports (a provider's error), logged without a
    traceback; any other exception is a bug or an unforeseen shape, logged with one. Both
    are retried on the ladder. `on_settled(event)`: more columns written when the event
    ends (LINE blanks a message's content). `drain_window()`: seconds within which a
    process enqueues at most one drain (0: one per request that stored a pending event).
    """

    batch = 50  # events read per round of a drain
    budget = 60.0  # seconds; a drain hands what is left to a new drain after this long

    def __init__(
        self,
        *,
        model: type[StoredWebhookEvent],
        handle: Handle,
        drain_task: str,
        name: str,
        expected: tuple[type[Exception], ...] = (),
        on_settled: Callable[[StoredWebhookEvent], dict] | None = None,
        drain_window: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.model, self.handle, self.drain_task, self.name = model, handle, drain_task, name
        self.expected, self.on_settled, self.drain_window = expected, on_settled, drain_window
        self.stranded_checked_at = float("-inf")  # time.monotonic() of the last look
        self.drain_requested_at = float("-inf")  # time.monotonic() of this process's last enqueue

    # -- storing what a webhook received -------------------------------------------

    @contextlib.contextmanager
    def receiving(self) -> Iterator[Received]:
        """One request's stores: `received.store(row)` for each event; when the request
        stored a pending one, a drain is enqueued once, as the block ends (`drain_soon`)."""
        received = Received(self)
        yield received
        if received.pending:
            self.drain_soon()

    def store(self, row: StoredWebhookEvent, *, held: Held | None = None) -> bool:
        """Store a received event once: True when stored now; False when the model holds it
        already (a redelivery: the same values of its unique constraint, e.g. the tenant and
        the provider's event id) or, given `held`, when no row holds those values (the
        Backlog tenant no longer holds the token its receiver checked). One INSERT
        (`row_insert_new`); any other refusal of the database (a DataError) is raised.

        Outside a transaction, without Django's health-check round trip before it (a
        `SELECT 1` on a kept-alive connection, at a request's first query): the INSERT is
        idempotent, so if the connection proves dead it is sent once more on a new one."""
        if connection.in_atomic_block:
            with transaction.atomic():  # a savepoint: a refused row leaves the caller's transaction usable
                return row_insert_new(row, held=held)
        connection.health_check_done = True
        try:
            return row_insert_new(row, held=held)
        except (InterfaceError, OperationalError):
            if connection.is_usable():
                raise
            connection.close()
        return row_insert_new(row, held=held)

    def drain_soon(self) -> bool:
        """Enqueue a drain, at most one per `drain_window()` seconds per process.

        A drain takes every due event, so during a burst one task per window is enough. An
        event stored just after a drain's last look, with no request after it to enqueue
        the next drain, is taken by the stranded-events step (run_scheduler, after
        STRANDED_AFTER) and, failing that, by the recurring sweep."""
        now = time.monotonic()
        if now - self.drain_requested_at < self.drain_window():
            return False
        self.drain_requested_at = now
        self.drain_enqueue()
        return True

    # -- which events are due ------------------------------------------------------

    def due(self, now: datetime) -> QuerySet:
        return self.model.objects.filter(
            EVENT_CLAIM.free(now), outcome__in=UNSETTLED, attempts__lt=MAX_EVENT_ATTEMPTS
        )

    def drain_enqueue(self) -> None:
        """A drain task now: after the caller's commit with Redis, which lies outside the
        transaction; in it with the ORM broker, whose task row commits with the events."""
        enqueue = lambda: broker_tasks.async_task(self.drain_task)  # noqa: E731
        if settings.REDIS_URL:
            transaction.on_commit(enqueue)  # Redis is outside any transaction the caller holds
        else:
            enqueue()  # the ORM broker's row commits (or not) with the caller's transaction

    # -- the drain, the stranded step and the sweep --------------------------------

    def drain(self, *, budget: float | None = None) -> int:
        """Process due events in arrival order until none is left; returns how many.

        Several drains may run at once: each event is claimed, so they share the work. A
        drain moves forward only, so an event it could not finish waits for its retry time.
        After `budget` seconds the rest goes to a new drain (a long burst never holds one
        worker past the task timeout)."""
        deadline = time.monotonic() + (self.budget if budget is None else budget)
        processed, after = 0, 0
        while batch := self._next_batch(after):
            tenants = Tenant.objects.in_bulk({tenant_id for _, tenant_id in batch})
            for event_id, tenant_id in batch:
                processed += self._drain_one(event_id, tenants[tenant_id])
            after = batch[-1][0]
            if time.monotonic() > deadline:
                self.drain_enqueue()
                break
        return processed

    def _next_batch(self, after: int) -> list[tuple[int, int]]:
        due = self.due(timezone.now()).filter(pk__gt=after).order_by("pk")
        return list(due.values_list("pk", "tenant_id")[: self.batch])

    def _drain_one(self, event_id: int, tenant: Tenant) -> bool:
        """One event of a drain or sweep; an error outside its handler (the database) is
        logged and the drain goes on: the event's hold runs out and it is due again."""
        try:
            return self.process(event_id=event_id, tenant=tenant) != CLAIMED_ELSEWHERE
        except Exception:
            logger.exception("%s %s failed", self.name, event_id)
            return False

    def stranded_drain(self, *, now: datetime) -> bool:
        """run_scheduler's look (at most every STRANDED_AFTER): enqueue a drain when an event
        has been due longer than STRANDED_AFTER (its task lost, behind a burst, or its retry
        time come)."""
        tick = time.monotonic()
        if tick - self.stranded_checked_at < STRANDED_AFTER.total_seconds():
            return False
        self.stranded_checked_at = tick
        if not self.due(now).filter(received_at__lte=now - STRANDED_AFTER).exists():
            return False
        self.drain_enqueue()
        return True

    def stranded_step(self, *, now: datetime, limit: int) -> bool:
        """run_scheduler's step: False even when it enqueued a drain, since the drain does
        the work and the loop has nothing more to claim for it."""
        self.stranded_drain(now=now)
        return False

    def sweep(self, *, older_than: timedelta = timedelta(minutes=1), limit: int = 500) -> int:
        """The recurring job: end an event whose attempts ran out with no outcome (a worker
        died on its last), then process the due events older than `older_than`."""
        now = timezone.now()
        unfinished = self.model.objects.filter(outcome__in=UNSETTLED, received_at__lt=now - older_than)
        gave_up = f"gave up after {MAX_EVENT_ATTEMPTS} attempts with no outcome"
        unfinished.filter(EVENT_CLAIM.free(now), attempts__gte=MAX_EVENT_ATTEMPTS).update(
            **self.model.finished(outcome=self.model.Outcome.REJECTED, detail=gave_up)
        )
        due = self.due(now).filter(received_at__lt=now - older_than).order_by("pk")
        rows = list(due.values_list("pk", "tenant_id")[:limit])
        tenants = Tenant.objects.in_bulk({tenant_id for _, tenant_id in rows})
        return sum(self._drain_one(event_id, tenants[tenant_id]) for event_id, tenant_id in rows)

    # -- one event -----------------------------------------------------------------

    def process(self, *, event_id: int, tenant: Tenant | None = None, **context: Any) -> str:
        """Process one stored event under a claim: the conditional UPDATE must hit the row,
        so two workers never act on it at once. Returns its outcome, or CLAIMED_ELSEWHERE.
        `tenant`: the event's, when the caller has it loaded; `context`: for the handler."""
        now = timezone.now()
        unsettled = self.model.objects.filter(outcome__in=UNSETTLED)
        claimed = claim_one(unsettled, pk=event_id, now=now, lease=EVENT_CLAIM, attempts=F("attempts") + 1)
        event = self._load(event_id, tenant)
        if not claimed:
            return event.outcome if event.is_settled() else CLAIMED_ELSEWHERE
        with keeper.keeping(held_claim(self.model, pk=event_id, lease=EVENT_CLAIM, now=now)):
            return self._run(event, context)

    def _load(self, event_id: int, tenant: Tenant | None) -> StoredWebhookEvent:
        if tenant is None:
            return self.model.objects.select_related("tenant").get(pk=event_id)
        event = self.model.objects.get(pk=event_id, tenant=tenant)
        event.tenant = tenant  # no join, no second decryption of its secrets
        return event

    def _run(self, event: StoredWebhookEvent, context: dict) -> str:
        """Run the claimed event's handler and record how it ended."""
        Outcome = self.model.Outcome
        try:
            detail = self.handle(event, **context)
        except EventIgnored as exc:  # nothing will ever come of it: not retried, no error
            return self._finish(event, Outcome.IGNORED, str(exc))
        except EventRejected as exc:
            return self._finish(event, Outcome.REJECTED, str(exc))
        except Exception as exc:
            return self._failed(event, exc)
        return self._finish(event, Outcome.DONE, detail)

    def _failed(self, event: StoredWebhookEvent, exc: Exception) -> str:
        """Failed, due again on the ladder; or, on the last attempt, rejected with the reason."""
        now = timezone.now()
        again = next_retry_at("webhook_event", event.attempts, now=now)
        expected = isinstance(exc, self.expected)
        if expected:
            level = logging.WARNING if again else logging.ERROR
            logger.log(level, "%s %s failed: %s", self.name, event.pk, exc)
        else:
            logger.exception("%s %s failed", self.name, event.pk)
        reason = str(exc) if expected else f"{type(exc).__name__}: {exc}"
        if again is None:
            detail = f"gave up after {MAX_EVENT_ATTEMPTS} attempts: {reason}"
            return self._finish(event, self.model.Outcome.REJECTED, detail)
        changes = self.model.finished(outcome=self.model.Outcome.FAILED, detail=reason)
        self.model.objects.filter(pk=event.pk).update(
            **changes | {"processed_at": now, EVENT_CLAIM.until: again}
        )
        return self.model.Outcome.FAILED

    def _finish(self, event: StoredWebhookEvent, outcome: str, detail: str) -> str:
        changes = self.model.finished(outcome=outcome, detail=detail)
        if self.on_settled is not None:
            changes |= self.on_settled(event)
        self.model.objects.filter(pk=event.pk).update(**changes)
        return outcome


class Received:
    """The events one request stored (`EventIntake.receiving`)."""

    def __init__(self, intake: EventIntake) -> None:
        self.intake, self.pending = intake, 0

    def store(self, row: StoredWebhookEvent, *, held: Held | None = None) -> bool:
        """`EventIntake.store`; a stored event that is not settled yet counts as pending."""
        stored = self.intake.store(row, held=held)
        self.pending += stored and not row.is_settled()
        return stored

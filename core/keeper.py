"""The keeper: while a process works on claimed rows, one daemon thread renews their leases.

Every claim registered with `keeping(...)` is renewed every third of its lease, one UPDATE
per queue and token; a claim found gone is marked `lost` and no longer renewed (the
worker's own checks decide what that means). `in_threads` runs a batch's calls
concurrently on pooled threads. docs/ARCHITECTURE.md, "The due-work kernel".
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.db import close_old_connections, connection
from django.db.models import Model, Q
from django.utils import timezone

from core.db import connection_release
from core.due import Lease

logger = logging.getLogger(__name__)

# Tests set False (tests/conftest.py): no thread starts (they run `renew_held` themselves)
# and `in_threads` runs its calls one after another, as another connection could not see
# a test's uncommitted rows.
THREADS = True
T = TypeVar("T")


@dataclass(eq=False)
class Held:
    """One claimed row as its worker holds it."""

    model: type[Model]
    pk: int
    lease: Lease
    owner: str  # the claim's token; "" when the lease has no owner column
    until: datetime  # the lease's end as last written: an owner-less claim is known by it
    lost: bool = False

    def mine(self) -> Q:
        if self.lease.owner:
            return self.lease.mine(self.owner)
        return Q(**{self.lease.until: self.until})


def held_claim(model: type[Model], *, pk: int, lease: Lease, now: datetime, owner: str = "") -> Held:
    """A claim just taken at `now` (its lease ends `lease.ends(now)`)."""
    return Held(model=model, pk=pk, lease=lease, owner=owner, until=lease.ends(now))


def _length(lease: Lease) -> timedelta:
    return lease.length() if callable(lease.length) else lease.length


class Keeper:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._held: set[Held] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def keeping(self, *claims: Held) -> Iterator[None]:
        """Renew `claims` until the block ends (or `drop` lets one go earlier)."""
        self.hold(*claims)
        try:
            yield
        finally:
            self.drop(*claims)

    def hold(self, *claims: Held) -> None:
        if os.getpid() != self._pid:  # a forked worker: the parent's thread is not here
            self._reset()
        with self._changed:
            idle = not self._held
            self._held.update(claims)
            if idle:
                self._changed.notify()
        if THREADS and claims and (self._thread is None or not self._thread.is_alive()):
            self._thread = threading.Thread(target=self._run, name="claim-keeper", daemon=True)
            self._thread.start()

    def drop(self, *claims: Held) -> None:
        with self._changed:
            self._held.difference_update(claims)

    def held(self) -> list[Held]:
        with self._changed:
            return list(self._held)

    def renew_held(self, now: datetime) -> None:
        """One pass: extend every held claim to `now` + its lease; mark the ones gone."""
        groups: dict[tuple, list[Held]] = defaultdict(list)
        for claim in self.held():
            if not claim.lost:
                key = (claim.model, claim.lease, claim.owner) if claim.lease.owner else (claim,)
                groups[key].append(claim)
        for claims in groups.values():
            self._renew(claims, now)

    def _renew(self, claims: list[Held], now: datetime) -> None:
        first, until = claims[0], claims[0].lease.ends(now)
        pks = {c.pk for c in claims}
        renewed = first.model.objects.filter(first.mine(), pk__in=pks).update(**{first.lease.until: until})
        if renewed != len(pks):  # which ones: by the token, or by the end just written
            mine = first.mine() if first.lease.owner else Q(**{first.lease.until: until})
            pks = set(first.model.objects.filter(mine, pk__in=pks).values_list("pk", flat=True))
        for claim in claims:
            if claim.pk in pks:
                claim.until = until
            else:
                claim.lost = True

    def _interval(self) -> float | None:
        lengths = [_length(c.lease).total_seconds() for c in self.held()]
        return min(lengths) / 3 if lengths else None

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._held:
                    connection.close()  # idle: no connection held open for nothing
                    self._changed.wait()
                interval = self._interval()
            time.sleep(interval)
            try:
                self.renew_held(timezone.now())
            except Exception:  # the database may be away for a moment; the next pass tries again
                logger.exception("renewing held claims failed")
                connection.close()


keeper = Keeper()


class ConnectionCheck:
    """`close_old_connections` for a loop that uses one thread's connection: at most every
    `every` seconds, and before the next use after a database error. A broken or too old
    connection is not reused, but not every call pays for the check: with CONN_HEALTH_CHECKS
    it makes the next query ask the server first (a round trip per call)."""

    def __init__(self, every: float = 1.0) -> None:
        self.every = every
        self._checked: float | None = None

    def __call__(self) -> None:
        now = time.monotonic()
        if self._checked is None or connection.errors_occurred or now - self._checked >= self.every:
            close_old_connections()
            self._checked = now


class _Pool:
    """The threads of `in_threads`, a ThreadPoolExecutor that outlives a batch. Without a
    connection pool its threads keep their database connection between calls (closed by
    `close_old_connections` after CONN_MAX_AGE), so a burst does not open a connection per
    row. Once no call has run for IDLE_SECONDS the executor is retired: each thread closes
    its connection (no connection held open for nothing) and ends; the next batch starts a
    new executor."""

    IDLE_SECONDS = 30.0
    CHECK_SECONDS = 1.0  # a thread's connection is checked at most this often (and after an error)
    # A ceiling, not a size: the executor starts a thread only when none is idle, so the pool
    # grows to the most calls running at once in this process and no further. Far above a
    # batch (at most DELIVERY_TASK_SIZE rows; a LINE push's LINEPUSH_SEND_LANES lanes), it
    # makes no row wait for a thread, as the pool never did.
    MOST_THREADS = 1000

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._checks = threading.local()
        self._executor: ThreadPoolExecutor | None = None
        self._threads = 0  # the executor's, counted as each starts
        self._running = 0  # calls handed over and not finished
        self._finished_at = 0.0  # time.monotonic() when the last call ended
        self._idle: threading.Timer | None = None

    def map(self, call: Callable[[T], object], items: list[T]) -> list:
        if os.getpid() != self._pid:  # a forked worker: the parent's threads are not here
            self._reset()
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.MOST_THREADS, "batch", initializer=self._started)
            executor = self._executor
            self._running += len(items)  # not retired while they run
        futures = [executor.submit(self._call, call, item) for item in items]
        return [future.result() for future in futures]

    def _started(self) -> None:
        self._checks.check = ConnectionCheck(self.CHECK_SECONDS)  # this thread's connection
        with self._lock:
            self._threads += 1

    def _call(self, call: Callable[[T], object], item: T) -> object:
        self._checks.check()
        try:
            return call(item)
        finally:
            connection_release()  # with a connection pool: back to it for the next thread
            with self._lock:
                self._running -= 1
                self._finished_at = time.monotonic()
                if not self._running and self._idle is None:
                    self._retire_after(self.IDLE_SECONDS)

    def _retire_after(self, seconds: float) -> None:
        self._idle = threading.Timer(seconds, self._retire)
        self._idle.daemon = True  # never keeps the process from exiting
        self._idle.start()

    def _retire(self) -> None:
        """IDLE_SECONDS after the last call ended: the threads close their connections and end."""
        with self._lock:
            self._idle = None
            quiet = time.monotonic() - self._finished_at
            if self._running or self._executor is None:
                return  # its last call looks again (or another look retired it)
            if quiet < self.IDLE_SECONDS:
                self._retire_after(self.IDLE_SECONDS - quiet)
                return
            # Idle that long, every thread started has run its initializer and waits for work.
            executor, threads = self._executor, self._threads
            self._executor, self._threads = None, 0
        together = threading.Barrier(threads)  # each thread takes exactly one of these
        for _ in range(threads):
            executor.submit(_close_connection, together)
        executor.shutdown()


def _close_connection(together: threading.Barrier) -> None:
    try:
        connection.close()
    finally:
        together.wait()  # this thread takes no other: every thread closes its own


_pool = _Pool()


def in_threads(call: Callable[[T], object], items: list[T]) -> list:
    """`call(item)` for each item, concurrently (one pooled thread each), results in order."""
    if not THREADS or len(items) < 2:
        return [call(item) for item in items]
    return _pool.map(call, items)

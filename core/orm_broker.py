"""django-q2's brokers as automedia runs them.

The ORM broker (the database as the queue) with fewer, larger writes: a pusher takes up to
`bulk` tasks with one UPDATE, the tasks of one pass are INSERTed in one transaction (core/due.py
`hand_out`), and an idle pusher is woken at an enqueue's commit (NOTIFY on PostgreSQL, a
wake file beside the database on SQLite) rather than at its next poll. Why:
docs/ARCHITECTURE.md, "django-q2's queue".

On either broker (`BulkORM`, `ClaimingRedis`) the pusher makes the queued claims of each
task it takes its own (core/due.py `prefetch`), so a cluster that dies frees them at once.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from time import sleep

from django.db import DatabaseError, connections, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from core.due import HANDED, prefetch, queued_tokens
from core.keeper import ConnectionCheck

logger = logging.getLogger(__name__)

WAKE_CHECK_SECONDS = 0.01  # how often a pusher waiting on SQLite looks at its queue's wake file


class BulkORM(ORM):
    def __init__(self, *args, **kwargs) -> None:
        self._local = threading.local()  # per thread: its connection's check, its held NOTIFY
        super().__init__(*args, **kwargs)
        # NOTIFY channel of this queue (an identifier: the cluster's name, letters kept).
        self.channel = "q_" + re.sub(r"\W", "_", self.list_key or Conf.CLUSTER_NAME, flags=re.ASCII)[:60]
        self._listening = None  # the driver connection that has LISTENed on it

    def get_connection(self, list_key: str | None = None) -> QuerySet:
        if transaction.get_autocommit(using=Conf.ORM):
            if not hasattr(self._local, "check"):
                self._local.check = ConnectionCheck()
            self._local.check()
        return OrmQ.objects.using(Conf.ORM)

    def delete(self, task_id: int) -> None:
        """A task done (acknowledged or failed) leaves the queue: one DELETE."""
        self.get_connection()  # the thread's connection check, as before every use of the queue
        connection = connections[Conf.ORM]
        table, pk = (connection.ops.quote_name(name) for name in (OrmQ._meta.db_table, OrmQ._meta.pk.column))
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table} WHERE {pk} = %s", [task_id])

    def enqueue(self, task: str) -> int:
        pk = super().enqueue(task)
        if getattr(self._local, "held", None) is not None:
            self._local.held += 1  # inside `notifying_once`: one NOTIFY at its end
        else:
            self._notify()
        return pk

    @contextlib.contextmanager
    def notifying_once(self) -> Iterator[None]:
        """The tasks enqueued inside (in the caller's transaction) send one NOTIFY, at the end."""
        if getattr(self._local, "held", None) is not None:  # nested: the outer one notifies
            yield
            return
        self._local.held = 0
        try:
            yield
            if self._local.held:
                self._notify()
        finally:
            self._local.held = None

    def _notify(self) -> None:
        connection = connections[Conf.ORM]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, '')", [self.channel])
        elif (wake := self.wake_file()) is not None:
            transaction.on_commit(lambda: _touch(wake), using=Conf.ORM)

    def wake_file(self) -> Path | None:
        """SQLite's NOTIFY: the file beside the database whose modification time an enqueue's
        commit sets. None for another database, or a database in memory (one process)."""
        connection = connections[Conf.ORM]
        if connection.vendor != "sqlite" or connection.is_in_memory_db():
            return None
        return Path(f"{connection.settings_dict['NAME']}-{self.channel}")

    def dequeue(self) -> list[tuple[int, str]] | None:
        queue = self.get_connection()
        wake = self.wake_file()
        woken = _stamp(wake)  # before the read: a commit after it wakes the wait
        # Read first, outside a transaction: an empty queue (most polls) takes no write lock.
        due = list(self._due().order_by("pk").values_list("pk", flat=True)[: Conf.BULK])
        if not due:
            self._wait(wake, woken)
            return None
        with transaction.atomic(using=Conf.ORM):
            now = timezone.now()
            tasks = list(
                queue.select_for_update(skip_locked=True)
                .filter(pk__in=due, lock__lt=now)
                .order_by("pk")
                .values_list("pk", "payload")
            )
            queue.filter(pk__in=[pk for pk, _ in tasks]).update(lock=now + timedelta(seconds=Conf.RETRY))
        claims_prefetch(tasks)
        return tasks

    def _due(self) -> QuerySet:
        return OrmQ.objects.using(Conf.ORM).filter(key=self.list_key, lock__lt=timezone.now())

    def _wait(self, wake: Path | None, woken: int | None) -> None:
        """Until a task may be queued: a NOTIFY on PostgreSQL, on SQLite a change of the wake
        file from `woken`; at most Conf.POLL seconds."""
        connection = connections[Conf.ORM]
        if connection.vendor != "postgresql" or connection.in_atomic_block:
            self._wait_for_file(wake, woken)
            return
        try:
            raw = connection.connection
            if raw is None or raw is not self._listening:
                with connection.cursor() as cursor:
                    cursor.execute(f"LISTEN {connection.ops.quote_name(self.channel)}")
                self._listening = raw = connection.connection
                # A task enqueued between the empty read and this LISTEN sent its NOTIFY to
                # no one: look again before waiting (on this connection: get_connection()
                # may close it, with CONN_MAX_AGE=0 at every call).
                if self._due().exists():
                    return
            for _ in raw.notifies(timeout=Conf.POLL, stop_after=1):
                pass
        except (DatabaseError, connection.Database.Error):
            # The connection broke: the next read reconnects, and LISTENs again.
            self._listening = None
            connection.close()
            sleep(Conf.POLL)

    def _wait_for_file(self, wake: Path | None, woken: int | None) -> None:
        if wake is None:
            sleep(Conf.POLL)
            return
        deadline = time.monotonic() + Conf.POLL
        while (left := deadline - time.monotonic()) > 0:
            sleep(min(WAKE_CHECK_SECONDS, left))
            if _stamp(wake) != woken:
                return


class ClaimingRedis(Redis):
    """django-q2's Redis broker; its pusher makes the claims of each task it takes its own."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._check = ConnectionCheck()  # the pusher's database connection, used only here

    def dequeue(self) -> list[tuple[None, str]] | None:
        tasks = super().dequeue()
        if tasks:
            self._check()
            claims_prefetch(tasks)
        return tasks


def claims_prefetch(tasks: list[tuple[object, str]]) -> None:
    """The pusher took `tasks` (ack id, signed package) from the broker: the queued claims in
    the arguments of each task whose function is marked `handed` become the pusher's, one
    UPDATE per queue. Never raises: a task whose claims stay queued still runs (its claims
    then wait for their lease if the cluster dies), and the pusher goes on."""
    tokens: dict[tuple, set[str]] = defaultdict(set)
    for _, package in tasks:
        try:
            task = SignedPackage.loads(package)
        except Exception:  # noqa: BLE001 - the pusher fails it
            continue
        func = task.get("func")
        spec = getattr(_located(func) if isinstance(func, str) else func, HANDED, None)
        if spec is not None:
            tokens[spec] |= queued_tokens([task.get("args"), task.get("kwargs")])
    try:
        now = timezone.now()
        for (model, lease), queued in tokens.items():
            if queued:
                prefetch(model, tokens=sorted(queued), now=now, lease=lease)
    except Exception:
        logger.warning("the claims of %s tasks taken from the broker stay queued", len(tasks), exc_info=True)


@functools.cache
def _located(path: str) -> Callable | None:
    try:
        return import_string(path)
    except ImportError:
        return None


def _stamp(wake: Path | None) -> int | None:
    """The wake file's modification time (ns); None when there is none."""
    try:
        return os.stat(wake).st_mtime_ns if wake is not None else None
    except OSError:
        return None


def _touch(wake: Path) -> None:
    """Sets the wake file's modification time to now, to the nanosecond (the file system's own
    clock ticks only every few ms: two commits in one tick would look like one)."""
    now = time.time_ns()
    try:
        wake.touch()
        os.utime(wake, ns=(now, now))
    except OSError:  # a pusher not woken still looks at its queue after its poll
        logger.warning("the queue's wake file %s could not be touched", wake, exc_info=True)

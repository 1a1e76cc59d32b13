"""django-q2's ORM broker (the database as the queue), taking a pusher's tasks several at a
time and a scheduler pass's tasks in one transaction.

django-q2's own ORM broker hands out one task per SELECT and UPDATE (`bulk` is ignored
beyond the SELECT's limit: each task is still its own UPDATE), and each task enqueued is
an INSERT of its own. On SQLite every one of those writes is a write transaction, taken in
turn with the deliverers' own; a burst's pusher spent its time waiting for that lock while
the workers waited for it. Here a pusher takes up to `bulk` tasks (Q_CLUSTER, per cluster)
with one UPDATE, and `enqueued_together` puts the INSERTs of several tasks into one
transaction. Which task a cluster gets is decided as before: only a task whose lock has
passed is taken, under the row lock on PostgreSQL (SKIP LOCKED: two pushers never wait
for each other) and under SQLite's write lock.

On PostgreSQL a pusher that finds its queue empty waits for a NOTIFY on its queue's channel,
sent by each enqueue (at commit, once per transaction), instead of sleeping a whole poll: a
task is taken as soon as it is committed, not up to `Q_POLL_SECONDS` later. The poll is still
the longest wait, so a lost notification costs no more than before. SQLite has no such
signal and sleeps the poll.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import timedelta
from time import sleep

from django.db import DatabaseError, connections, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django_q.brokers import Broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ


class BulkORM(ORM):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # NOTIFY channel of this queue (an identifier: the cluster's name, letters kept).
        self.channel = "q_" + re.sub(r"\W", "_", self.list_key or Conf.CLUSTER_NAME, flags=re.ASCII)[:60]
        self._listening = None  # the driver connection that has LISTENed on it

    def enqueue(self, task: str) -> int:
        pk = super().enqueue(task)
        connection = connections[Conf.ORM]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, '')", [self.channel])
        return pk

    def dequeue(self) -> list[tuple[int, str]] | None:
        if Conf.BULK <= 1:
            return super().dequeue()
        queue = self.get_connection()
        # Read first, outside a transaction: an empty queue (most polls) takes no write lock.
        due = list(self._due().order_by("pk").values_list("pk", flat=True)[: Conf.BULK])
        if not due:
            self._wait()
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
        return tasks

    def _due(self) -> QuerySet:
        return OrmQ.objects.using(Conf.ORM).filter(key=self.list_key, lock__lt=timezone.now())

    def _wait(self) -> None:
        """Until a task may be queued: a NOTIFY on PostgreSQL, at most Conf.POLL seconds."""
        connection = connections[Conf.ORM]
        if connection.vendor != "postgresql" or connection.in_atomic_block:
            sleep(Conf.POLL)
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


@contextlib.contextmanager
def enqueued_together(broker: Broker) -> Iterator[None]:
    """The tasks enqueued inside on `broker` are committed together when it is the ORM
    broker (one transaction: on SQLite, one turn of the write lock); Redis is unchanged, and
    so is `sync` (Q_SYNC, tests), where each task runs at once, in its caller."""
    if isinstance(broker, ORM) and not Conf.SYNC:
        with transaction.atomic(using=Conf.ORM):
            yield
    else:
        yield

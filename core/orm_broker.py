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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from time import sleep

from django.db import transaction
from django.utils import timezone
from django_q.brokers import Broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf


class BulkORM(ORM):
    def dequeue(self) -> list[tuple[int, str]] | None:
        if Conf.BULK <= 1:
            return super().dequeue()
        queue = self.get_connection()
        # Read first, outside a transaction: an empty queue (most polls) takes no write lock.
        due = list(
            queue.filter(key=self.list_key, lock__lt=timezone.now())
            .order_by("pk")
            .values_list("pk", flat=True)[: Conf.BULK]
        )
        if not due:
            sleep(Conf.POLL)
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

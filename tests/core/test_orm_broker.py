"""The ORM broker of core/orm_broker.py: a pusher takes several tasks with one UPDATE, only
tasks whose lock has passed, oldest first; a scheduler pass's tasks commit together, handed
out through one door (`hand_out`) on the queue's one broker."""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import timedelta
from types import SimpleNamespace

import django_q.tasks
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

import core.due
import core.keeper
import core.orm_broker
from core.due import enqueued_together, hand_out, new_token, per_token, queue_broker
from core.holders import PUSHER
from core.orm_broker import BulkORM, ClaimingRedis
from deliveries.models import DeliverySchedule
from deliveries.publish.scheduler import schedules_claim
from linepush.models import LinePushItem
from tests.helpers.deliveries import make_schedule
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = os.environ.get(
    "TEST_REDIS_URL", "redis://127.0.0.1:6379/15"
)  # as tests/automedia_site/test_broker.py


@pytest.fixture
def bulk(monkeypatch):
    monkeypatch.setattr(Conf, "BULK", 3)
    monkeypatch.setattr(Conf, "POLL", 0.0)
    return BulkORM(list_key="deliveries")


def writes(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"] for q in queries.captured_queries if q["sql"].split()[0] in ("UPDATE", "INSERT", "DELETE")
    ]


def test_a_pusher_takes_up_to_bulk_tasks_oldest_first_in_one_update(bulk):
    for n in range(5):
        bulk.enqueue(f"task {n}")
    OrmQ.objects.create(key="automedia", payload="the default queue's", lock=timezone.now())

    with CaptureQueriesContext(connection) as queries:
        first = bulk.dequeue()
    second = bulk.dequeue()

    assert [payload for _, payload in first] == ["task 0", "task 1", "task 2"]
    assert [payload for _, payload in second] == ["task 3", "task 4"]
    assert len(writes(queries)) == 1
    # Taken means locked for Conf.RETRY: no pusher takes them again meanwhile.
    assert all(
        t.lock > timezone.now() + timedelta(seconds=Conf.RETRY - 60)
        for t in OrmQ.objects.filter(key="deliveries")
    )
    assert bulk.dequeue() is None


def test_a_task_whose_lock_has_not_passed_is_left(bulk):
    bulk.enqueue("free")
    OrmQ.objects.create(key="deliveries", payload="taken", lock=timezone.now() + timedelta(minutes=5))

    assert [payload for _, payload in bulk.dequeue()] == ["free"]


def test_an_empty_queue_is_one_read_and_no_write(bulk):
    assert bulk.dequeue() is None  # the first time, on PostgreSQL, it also LISTENs
    with CaptureQueriesContext(connection) as queries:
        assert bulk.dequeue() is None

    assert len(queries.captured_queries) == 1
    assert queries.captured_queries[0]["sql"].startswith("SELECT")


def test_the_default_clusters_pusher_takes_one_task_the_same_way(bulk, monkeypatch):
    monkeypatch.setattr(Conf, "BULK", 1)  # django-q2's default: the default cluster's
    default = BulkORM(list_key="automedia")
    default.enqueue("one")
    default.enqueue("two")

    with CaptureQueriesContext(connection) as queries:
        assert [payload for _, payload in default.dequeue()] == ["one"]
    assert [payload for _, payload in default.dequeue()] == ["two"]
    assert len(writes(queries)) == 1
    # Locked for Conf.RETRY, as a batch is.
    assert all(t.lock > timezone.now() + timedelta(seconds=Conf.RETRY - 60) for t in OrmQ.objects.all())
    assert default.dequeue() is None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: SQLite has one write lock")
def test_two_pushers_on_postgresql_never_take_the_same_task_nor_wait(bulk):
    for n in range(4):
        bulk.enqueue(f"task {n}")
    first_id = OrmQ.objects.order_by("pk").first().pk
    locked, release = threading.Event(), threading.Event()

    def other_pusher_holds_the_first():
        with transaction.atomic():
            OrmQ.objects.select_for_update().get(pk=first_id)
            locked.set()
            release.wait(10)
        connection.close()

    other = threading.Thread(target=other_pusher_holds_the_first)
    other.start()
    try:
        assert locked.wait(10)
        taken = bulk.dequeue()  # would block here without SKIP LOCKED
    finally:
        release.set()
        other.join()

    # It read the three oldest and skipped the one held: the next dequeue takes the rest.
    assert [payload for _, payload in taken] == ["task 1", "task 2"]
    assert [payload for _, payload in bulk.dequeue()] == ["task 0", "task 3"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY: SQLite sleeps the poll")
@pytest.mark.parametrize("size", [3, 1], ids=["deliveries", "default cluster"])
def test_an_idle_pusher_on_postgresql_takes_a_task_when_it_is_committed_not_a_poll_later(monkeypatch, size):
    monkeypatch.setattr(Conf, "BULK", size)
    monkeypatch.setattr(Conf, "POLL", 60.0)
    pusher = BulkORM(list_key="deliveries")
    taken, given_up = [], threading.Event()

    def run_pusher():
        try:
            while not taken and not given_up.is_set():  # empty: it LISTENs, then waits up to 60 s
                taken.extend(pusher.dequeue() or [])
        finally:
            connection.close()

    thread = threading.Thread(target=run_pusher, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while pusher._listening is None and time.monotonic() < deadline:  # it has found the queue empty
        time.sleep(0.01)
    with enqueued_together(BulkORM(list_key="deliveries")):
        BulkORM(list_key="deliveries").enqueue("due now")
    thread.join(15)
    given_up.set()  # a pusher that slept its poll stops after it, not in a loop (the test fails)

    assert not thread.is_alive(), "the pusher slept its poll: no NOTIFY woke it"
    assert [payload for _, payload in taken] == ["due now"]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL wakes a pusher with NOTIFY")
@pytest.mark.parametrize("size", [3, 1], ids=["deliveries", "default cluster"])
def test_an_idle_pusher_on_sqlite_takes_a_task_when_it_is_committed_not_a_poll_later(
    monkeypatch, tmp_path, size
):
    # The tests' SQLite database is in memory (no file beside it): the file is given here.
    monkeypatch.setattr(BulkORM, "wake_file", lambda broker: tmp_path / f"db.sqlite3-{broker.channel}")
    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(Conf, "BULK", size)
    monkeypatch.setattr(Conf, "POLL", 60.0)
    pusher, taken, waiting, given_up = (
        BulkORM(list_key="deliveries"),
        [],
        threading.Event(),
        threading.Event(),
    )
    real_wait = BulkORM._wait_for_file

    def wait(broker, wake, woken):
        waiting.set()  # its read is over (in-memory SQLite's shared cache does not wait on locks)
        return real_wait(broker, wake, woken)

    monkeypatch.setattr(BulkORM, "_wait_for_file", wait)

    def run_pusher():
        try:
            while not taken and not given_up.is_set():  # empty: it waits for its wake file, <= 60 s
                taken.extend(pusher.dequeue() or [])
        finally:
            connection.close()

    thread = threading.Thread(target=run_pusher, daemon=True)
    thread.start()
    assert waiting.wait(10)  # it has found the queue empty
    broker = BulkORM(list_key="deliveries")
    with pytest.raises(RuntimeError), enqueued_together(broker):
        broker.enqueue("rolled back")
        raise RuntimeError("the pass failed: nothing committed, nobody woken")
    assert not (tmp_path / "db.sqlite3-q_deliveries").exists()
    with enqueued_together(broker):
        broker.enqueue("due now")
    thread.join(15)
    given_up.set()  # a pusher that slept its poll stops after it, not in a loop (the test fails)

    assert not thread.is_alive(), "the pusher slept its poll: the commit did not wake it"
    assert [payload for _, payload in taken] == ["due now"]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL wakes a pusher with NOTIFY")
def test_a_database_in_memory_has_no_wake_file_and_its_pusher_sleeps_the_poll(bulk, monkeypatch):
    naps = []
    monkeypatch.setattr("core.orm_broker.sleep", naps.append)
    monkeypatch.setattr(Conf, "POLL", 0.2)

    assert bulk.wake_file() is None  # the tests' SQLite database is in memory: one process
    assert bulk.dequeue() is None
    assert naps == [0.2]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY: SQLite sleeps the poll")
def test_a_pusher_on_a_new_connection_listens_looks_again_and_still_waits(bulk, monkeypatch):
    waits = []
    monkeypatch.setattr(  # the driver's wait (psycopg), recorded instead of made
        connection.Database.Connection,
        "notifies",
        lambda raw, timeout, stop_after: waits.append(timeout) or iter(()),
    )
    for _ in range(2):
        connection.close()  # as get_connection() does at every call with CONN_MAX_AGE=0
        with CaptureQueriesContext(connection) as queries:
            assert bulk.dequeue() is None

        # The read, the LISTEN, the second look; then a wait, not another turn of the loop.
        assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT", "LISTEN", "SELECT"]
    assert waits == [Conf.POLL, Conf.POLL]


def test_a_task_done_leaves_the_queue_with_one_statement_and_no_health_check_each(bulk, monkeypatch):
    monkeypatch.setattr(core.keeper, "time", SimpleNamespace(monotonic=lambda: 1000.0))  # one instant
    for n in range(3):
        bulk.enqueue(f"task {n}")
    done = [pk for pk, _ in bulk.dequeue()]
    checks, statements = [], []
    usable = connection.is_usable
    monkeypatch.setattr(connection, "is_usable", lambda: checks.append(True) or usable())

    def record(execute, sql, params, many, context):
        statements.append((sql.split()[0], context["connection"].get_autocommit()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        bulk.acknowledge(done[0])
        bulk.fail(done[1])  # a failed task (ack_failures) leaves the same way
        bulk.acknowledge(done[2])

    assert statements == [("DELETE", True)] * 3  # in autocommit: no BEGIN and COMMIT around it
    assert len(checks) <= 1  # the connection is asked at most once a second, not per task
    assert not OrmQ.objects.exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY: SQLite sleeps the poll")
def test_a_passs_tasks_send_one_notify_and_a_lone_task_its_own(monkeypatch):
    monkeypatch.setattr(Conf, "SYNC", False)
    broker = BulkORM(list_key="deliveries")

    def notifies(queries: CaptureQueriesContext) -> int:
        return sum("pg_notify" in q["sql"] for q in queries.captured_queries)

    with CaptureQueriesContext(connection) as together:
        with enqueued_together(broker):
            broker.enqueue("one")
            with enqueued_together(broker):  # nested: still the outer block's one NOTIFY
                broker.enqueue("two")
            broker.enqueue("three")
    with CaptureQueriesContext(connection) as alone:
        broker.enqueue("four")

    sql = [q["sql"].split()[0] for q in together.captured_queries]
    assert notifies(together) == 1
    assert sql.index("SELECT") > max(at for at, verb in enumerate(sql) if verb == "INSERT")  # at the end
    assert notifies(alone) == 1
    assert OrmQ.objects.count() == 4


def test_a_passs_tasks_commit_together_on_the_orm_broker(monkeypatch):
    monkeypatch.setattr(Conf, "SYNC", False)
    broker = BulkORM(list_key="deliveries")

    with pytest.raises(RuntimeError), enqueued_together(broker):
        broker.enqueue("one")
        broker.enqueue("two")
        raise RuntimeError("the pass failed before its end")

    assert not OrmQ.objects.exists()  # neither was committed: one transaction
    with enqueued_together(broker):
        broker.enqueue("one")
        broker.enqueue("two")
    assert OrmQ.objects.count() == 2


def test_other_brokers_enqueue_outside_a_transaction():
    class Elsewhere:
        def enqueue(self, task):
            self.autocommit = transaction.get_autocommit()

    broker = Elsewhere()
    with enqueued_together(broker):
        broker.enqueue("one")

    assert broker.autocommit is True


def test_tasks_run_at_once_in_sync_mode_are_not_inside_a_transaction(monkeypatch):
    monkeypatch.setattr(Conf, "SYNC", True)  # the task would run in the pass's transaction
    with enqueued_together(BulkORM(list_key="deliveries")):
        assert transaction.get_autocommit()


@pytest.fixture
def brokers_made(monkeypatch):
    """The queues' brokers made from here on (each process's first), by queue."""
    made = []
    real = core.due.get_broker
    monkeypatch.setattr(core.due, "get_broker", lambda queue: made.append(queue) or real(queue))
    queue_broker.cache_clear()
    yield made
    queue_broker.cache_clear()


def test_hand_out_sends_a_passs_tasks_through_the_queues_one_broker_in_one_transaction(
    monkeypatch, brokers_made
):
    monkeypatch.setattr(Conf, "SYNC", False)
    claimed = [(1, "q-a"), (2, "q-a"), (3, "q-b"), (4, "q-c"), (5, "q-c")]

    assert hand_out("deliveries.tasks.deliver_batch", per_token(claimed), queue="deliveries") == 3
    assert hand_out("deliveries.tasks.deliver_batch", per_token([(6, "q-d")]), queue="deliveries") == 1

    assert brokers_made == ["deliveries"]  # once per process: with Redis, one connection
    tasks = [SignedPackage.loads(t.payload) for t in OrmQ.objects.filter(key="deliveries").order_by("pk")]
    assert [t["args"] for t in tasks] == [  # a token's rows in one task, as its one argument
        ([(1, "q-a"), (2, "q-a")],),
        ([(3, "q-b")],),
        ([(4, "q-c"), (5, "q-c")],),
        ([(6, "q-d")],),
    ]
    assert {t["func"] for t in tasks} == {"deliveries.tasks.deliver_batch"}
    assert {t["cluster"] for t in tasks} == {"deliveries"}


def test_hand_out_commits_a_passs_tasks_together_or_none(monkeypatch, brokers_made):
    monkeypatch.setattr(Conf, "SYNC", False)
    real, calls = django_q.tasks.async_task, []

    def second_fails(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("the pass failed at its second task")
        return real(*args, **kwargs)

    monkeypatch.setattr(django_q.tasks, "async_task", second_fails)
    with pytest.raises(RuntimeError):
        hand_out("deliveries.tasks.deliver_batch", per_token([(1, "q-a"), (2, "q-b")]), queue="deliveries")

    assert len(calls) == 2 and not OrmQ.objects.exists()  # the first was not committed alone


def test_hand_out_passes_each_tasks_arguments_as_given_and_the_default_queue_has_no_cluster(
    monkeypatch, brokers_made
):
    enqueued = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kwargs: enqueued.append((args, kwargs)))

    hand_out("linepush.tasks.push_send", [([1, 2], "q-a", False), ([3], "q-a", True)])

    broker = queue_broker(None)
    assert enqueued == [
        (("linepush.tasks.push_send", [1, 2], "q-a", False), {"broker": broker}),
        (("linepush.tasks.push_send", [3], "q-a", True), {"broker": broker}),
    ]
    assert brokers_made == [None] and broker.list_key == Conf.CLUSTER_NAME


def test_hand_out_with_nothing_claimed_makes_no_broker_and_no_transaction(monkeypatch, brokers_made):
    monkeypatch.setattr(Conf, "SYNC", False)  # else no transaction either
    with CaptureQueriesContext(connection) as queries:
        assert hand_out("deliveries.tasks.deliver_batch", per_token([]), queue="deliveries") == 0

    assert brokers_made == [] and queries.captured_queries == []


def _task(func: str, *args) -> str:
    return SignedPackage.dumps({"id": uuid.uuid4().hex, "func": func, "args": args, "kwargs": {}})


def test_the_orm_brokers_pusher_makes_the_claims_of_the_tasks_it_takes_its_own(bulk):
    make_schedule()
    [(schedule_id, token)] = schedules_claim(now=timezone.now())
    bulk.enqueue(_task("deliveries.tasks.deliver_batch", [(schedule_id, token)]))

    [(_, package)] = bulk.dequeue()

    assert SignedPackage.loads(package)["args"] == ([(schedule_id, token)],)  # the task as it was
    claimed = DeliverySchedule.objects.get(pk=schedule_id).claimed_by
    assert claimed.startswith(PUSHER) and claimed.endswith(token[-23:])


def test_the_redis_brokers_pusher_makes_the_claims_of_the_tasks_it_takes_its_own(monkeypatch):
    monkeypatch.setattr(Conf, "REDIS", REDIS_URL)
    token, now = new_token(queued=True), timezone.now()
    item = LinePushItem.objects.create(
        tenant=TenantFactory(),
        ext_group_id="C1",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "x"}],
        dedupe_key=token,
        scheduled_at=now,
        claimed_by=token,
        lease_until=now + timedelta(seconds=5),
    )
    broker = ClaimingRedis(list_key=f"test-{uuid.uuid4().hex}")
    broker.enqueue(_task("linepush.tasks.push_send", [item.pk], token))
    try:
        [(_, package)] = broker.dequeue()
    finally:
        broker.delete_queue()

    item.refresh_from_db()
    assert item.claimed_by.startswith(PUSHER) and item.claimed_by.endswith(token[-23:])

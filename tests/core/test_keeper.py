"""The keeper (core/keeper.py): a live worker renews what it holds; a dead one's claim
runs out within one short lease."""

from __future__ import annotations

import queue
import threading
import time
import types
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

import core.keeper
from backlog_bridge.models import BacklogEvent
from core.due import Lease, claim, claim_one, take_over
from core.keeper import held_claim, keeper
from linepush.models import LinePushItem
from tests.helpers.factories import TenantFactory
from tests.helpers.waiting import STUCK_SECONDS

LEASE = Lease(length=timedelta(seconds=3))
HOLD = Lease(length=timedelta(seconds=3), until="claimed_until", owner=None)


def item(tenant, n: int) -> LinePushItem:
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="C1",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "x"}],
        dedupe_key=f"k{n}",
        scheduled_at=timezone.now() - timedelta(seconds=1),
    )


def due():
    return LinePushItem.objects.filter(scheduled_at__lte=timezone.now()).order_by("pk")


@pytest.mark.django_db
def test_it_renews_every_held_claim_and_marks_one_another_worker_took():
    tenant = TenantFactory()
    first, second = item(tenant, 1), item(tenant, 2)
    with time_machine.travel(timezone.now(), tick=False) as clock:
        now = timezone.now()
        [(_, token)] = claim(due().filter(pk=first.pk), now=now, lease=LEASE, limit=1)
        kept = held_claim(LinePushItem, pk=first.pk, lease=LEASE, now=now, owner=token)
        [(_, other)] = claim(due().filter(pk=second.pk), now=now, lease=LEASE, limit=1)
        taken = held_claim(LinePushItem, pk=second.pk, lease=LEASE, now=now, owner=other)
        with keeper.keeping(kept, taken):
            for _ in range(4):  # four leases long, renewed each third of one
                clock.shift(timedelta(seconds=1))
                keeper.renew_held(timezone.now())
                assert claim(due(), now=timezone.now(), lease=LEASE, limit=2) == []
            LinePushItem.objects.filter(pk=second.pk).update(claimed_by="another worker")
            keeper.renew_held(timezone.now())

        assert LinePushItem.objects.get(pk=first.pk).lease_until == timezone.now() + timedelta(seconds=3)
        assert (kept.lost, taken.lost) == (False, True)
        assert keeper.held() == []


@pytest.mark.django_db
def test_it_renews_a_claim_without_owner_by_the_end_it_last_wrote():
    event = BacklogEvent.objects.create(tenant=TenantFactory(), activity_id=1, type=2, payload={})
    with time_machine.travel(timezone.now(), tick=False) as clock:
        now = timezone.now()
        assert claim_one(BacklogEvent, pk=event.pk, now=now, lease=HOLD)
        held = held_claim(BacklogEvent, pk=event.pk, lease=HOLD, now=now)
        with keeper.keeping(held):
            clock.shift(timedelta(seconds=2))
            keeper.renew_held(timezone.now())
            clock.shift(timedelta(seconds=2))  # past the first lease: still held
            assert claim_one(BacklogEvent, pk=event.pk, now=timezone.now(), lease=HOLD) is False

            clock.shift(timedelta(seconds=2))  # a stall: the lease ran out and another took it
            assert claim_one(BacklogEvent, pk=event.pk, now=timezone.now(), lease=HOLD) is True
            clock.shift(timedelta(seconds=0.1))
            keeper.renew_held(timezone.now())

        assert held.lost is True


@pytest.mark.django_db
def test_a_dead_workers_claim_is_free_again_after_one_lease():
    row = item(TenantFactory(), 1)
    now = timezone.now()
    [(_, queued)] = claim(due(), now=now, lease=LEASE, limit=1, queued=True)
    token, [pk] = take_over(LinePushItem, pks=[row.pk], now=now, lease=LEASE, token=queued)
    # The worker dies: nothing renews its claim.

    assert claim(due(), now=now + timedelta(seconds=2.9), lease=LEASE, limit=1) == []
    [(again, _)] = claim(due(), now=now + timedelta(seconds=3), lease=LEASE, limit=1)
    assert again == pk and token != queued


@pytest.mark.django_db(transaction=True)
def test_its_thread_keeps_a_claim_across_a_call_longer_than_the_lease(monkeypatch):
    monkeypatch.setattr(core.keeper, "THREADS", True)
    naps, wake = queue.Queue(), threading.Semaphore(0)

    def nap(seconds: float) -> None:  # the thread's wait between passes, as long as the test says
        naps.put(seconds)
        wake.acquire(timeout=STUCK_SECONDS)

    monkeypatch.setattr(core.keeper, "time", types.SimpleNamespace(sleep=nap, monotonic=time.monotonic))
    row = item(TenantFactory(), 1)
    with time_machine.travel(timezone.now(), tick=False) as clock:
        [(_, token)] = claim(due(), now=timezone.now(), lease=LEASE, limit=1)
        held = held_claim(LinePushItem, pk=row.pk, lease=LEASE, now=timezone.now(), owner=token)
        claimable = []
        with keeper.keeping(held):
            for _ in range(8):  # a platform call over two and a half leases long
                clock.shift(timedelta(seconds=naps.get(timeout=STUCK_SECONDS)))
                # The end of a nap, before the pass it ends: the claim's oldest renewal.
                claimable += claim(due(), now=timezone.now(), lease=LEASE, limit=1)
                wake.release()
            naps.get(timeout=STUCK_SECONDS)  # the last pass is done
        wake.release()  # the thread finds nothing held and waits idle

        assert claimable == []
        assert LinePushItem.objects.get(pk=row.pk).lease_until == timezone.now() + LEASE.length
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_in_threads_reuses_its_threads_and_their_connections_from_one_batch_to_the_next(monkeypatch):
    """A burst of batches must not open a database connection per row: the second batch
    runs on the first one's threads, on the connections they opened."""
    monkeypatch.setattr(core.keeper, "THREADS", True)
    monkeypatch.setattr(core.keeper, "_pool", core.keeper._Pool())
    gate = threading.Barrier(3, timeout=10)

    def where(n: int) -> tuple[int, threading.Thread, object]:
        gate.wait()  # all three at once: three threads
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        # The objects themselves (kept alive by the results), so no identity is recycled.
        return n, threading.current_thread(), connection.connection

    first = core.keeper.in_threads(where, [1, 2, 3])
    second = core.keeper.in_threads(where, [4, 5, 6])

    assert [n for n, _, _ in first + second] == [1, 2, 3, 4, 5, 6]  # results in order
    assert {id(t) for _, t, _ in second} == {id(t) for _, t, _ in first}  # no new thread
    assert {id(c) for _, _, c in second} == {id(c) for _, _, c in first}  # no new connection
    assert len({id(t) for _, t, _ in first}) == 3


def test_in_threads_hands_a_calls_exception_to_its_caller(monkeypatch):
    monkeypatch.setattr(core.keeper, "THREADS", True)
    monkeypatch.setattr(core.keeper, "_pool", core.keeper._Pool())

    def call(n: int) -> int:
        if n == 2:
            raise ValueError("two")
        return n

    with pytest.raises(ValueError, match="two"):
        core.keeper.in_threads(call, [1, 2, 3])
    assert core.keeper.in_threads(call, [1, 3]) == [1, 3]  # the pool still works


def test_in_threads_checks_a_threads_connection_once_a_second_not_before_every_call(monkeypatch):
    """Django's check (close_old_connections) makes the next query ask the server whether
    the connection is alive (CONN_HEALTH_CHECKS): a round trip per row if done per call."""
    monkeypatch.setattr(core.keeper, "THREADS", True)
    monkeypatch.setattr(core.keeper, "_pool", core.keeper._Pool())
    checks = []
    monkeypatch.setattr(core.keeper, "close_old_connections", lambda: checks.append(threading.get_ident()))
    gate = threading.Barrier(2, timeout=10)

    def call(n: int) -> int:
        gate.wait()
        return n

    for _ in range(3):
        assert core.keeper.in_threads(call, [1, 2]) == [1, 2]

    assert len(checks) == 2  # once per thread, within the second


def test_in_threads_closes_its_threads_connections_once_nothing_runs(monkeypatch):
    """No connection held open for nothing: once no call has run for IDLE_SECONDS, each
    thread closes its own connection and ends; the next batch starts threads of its own."""
    monkeypatch.setattr(core.keeper, "THREADS", True)
    pool = core.keeper._Pool()
    pool.IDLE_SECONDS = 0.0  # idle as soon as the batch ends
    monkeypatch.setattr(core.keeper, "_pool", pool)
    closed = []
    db = types.SimpleNamespace(errors_occurred=False, close=lambda: closed.append(threading.current_thread()))
    monkeypatch.setattr(core.keeper, "connection", db)  # each thread's connection, as the pool sees it
    gate = threading.Barrier(3, timeout=10)

    def where(n: int) -> threading.Thread:
        gate.wait()  # all three at once: three threads
        return threading.current_thread()

    first = core.keeper.in_threads(where, [1, 2, 3])
    for thread in first:
        thread.join(STUCK_SECONDS)

    assert len(closed) == 3 and set(closed) == set(first)  # each thread closed its own, once
    assert not any(thread.is_alive() for thread in first)
    second = core.keeper.in_threads(where, [4, 5, 6])
    assert not set(second) & set(first)
    for thread in second:
        thread.join(STUCK_SECONDS)


def test_in_threads_in_a_forked_worker_starts_threads_of_its_own(monkeypatch):
    """A forked child has none of its parent's threads: handing them work would wait forever."""
    monkeypatch.setattr(core.keeper, "THREADS", True)
    pool = core.keeper._Pool()
    monkeypatch.setattr(core.keeper, "_pool", pool)
    gate = threading.Barrier(2, timeout=10)

    def where(n: int) -> threading.Thread:
        gate.wait()
        return threading.current_thread()

    parents = core.keeper.in_threads(where, [1, 2])
    pool._pid = 0  # as in a child forked since: another process id

    assert not set(core.keeper.in_threads(where, [3, 4])) & set(parents)


def test_a_connection_check_runs_at_most_once_a_second_and_again_after_a_database_error(monkeypatch):
    checks, clock = [], [100.0]
    monkeypatch.setattr(core.keeper, "close_old_connections", lambda: checks.append(clock[0]))
    monkeypatch.setattr(core.keeper.time, "monotonic", lambda: clock[0])
    db = types.SimpleNamespace(errors_occurred=False)  # the thread's connection, as the check sees it
    monkeypatch.setattr(core.keeper, "connection", db)
    check = core.keeper.ConnectionCheck(every=1.0)

    for step in (0.0, 0.3, 0.6):
        clock[0] = 100.0 + step
        check()
    assert checks == [100.0]
    db.errors_occurred = True
    clock[0] = 100.7
    check()  # the connection saw an error: checked before its next use
    db.errors_occurred = False  # Django clears it when the check finds the connection usable
    clock[0] = 101.2
    check()
    clock[0] = 101.8
    check()
    assert checks == [100.0, 100.7, 101.8]

"""`deliver_batch`: the schedules one scheduler pass claimed, delivered in one task."""

from __future__ import annotations

import threading
from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import core.keeper
from core.group_commit import GroupCommit
from core.keeper import keeper
from core.transport import TransportError
from deliveries import tasks
from deliveries.models import ContentTask, DeliveryAttempt, DeliveryLock, DeliverySchedule
from deliveries.publish.delivery import WRITEBACK_QUEUED
from deliveries.publish.scheduler import schedules_claim
from line.transport import LineTransport
from tests.helpers.backlog import body
from tests.helpers.deliveries import make_schedule, write_backs
from tests.helpers.factories import TenantFactory

PUSHES = "/v2/bot/message/multicast"


def claim_all() -> list[tuple[int, str]]:
    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=False):
        return schedules_claim(now=timezone.now())


def test_it_sends_a_burst_first_and_writes_each_back_once_after(approved, line, fake_backlog, tenant):
    keys = [approved(body()) for _ in range(3)]
    claims = claim_all()

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        # A sent delivery leaves its write-back to the write-backs' queue.
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED] * 3
        assert len([r for r in line.requests if r.path == PUSHES]) == 3
        assert not [r for r in fake_backlog.requests if r.method == "PATCH"]
        assert schedules_claim(now=timezone.now()) == []  # a write-back is not a send

        assert sorted(write_backs().values()) == ["delivered"] * 3

    assert len([r for r in line.requests if r.path == PUSHES]) == 3
    assert not DeliverySchedule.objects.filter(task__issue_key__in=keys).exists()
    patches = [r for r in fake_backlog.requests if r.method == "PATCH"]
    assert sorted(r.path.rsplit("/", 1)[-1] for r in patches) == sorted(keys)


def test_a_batch_makes_its_rows_writes_through_one_group_commit(approved, line, tenant, monkeypatch):
    [approved(body()) for _ in range(3)]
    claims = claim_all()
    groups = []

    class Counted(GroupCommit):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.handed = 0
            groups.append(self)

        def write(self, make):
            self.handed += 1
            return super().write(make)

    monkeypatch.setattr(tasks, "GroupCommit", Counted)
    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED] * 3
        assert [group.handed for group in groups] == [3]  # each send's record, in one group
    assert DeliveryAttempt.objects.count() == 3
    assert DeliverySchedule.objects.filter(stage=DeliverySchedule.Stage.WRITEBACK).count() == 3


def test_one_delivery_that_crashes_does_not_stop_the_others(approved, line, tenant):
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    [approved(body()) for _ in range(3)]
    claims = claim_all()
    real = tasks.delivery_run

    def run(*, schedule_id, token, **kw):
        if schedule_id == claims[0][0]:
            raise RuntimeError("bug")
        return real(schedule_id=schedule_id, token=token, **kw)

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with (
        time_machine.travel(due + timedelta(seconds=0.5), tick=True),
        mock.patch.object(tasks, "delivery_run", run),
    ):
        assert tasks.deliver_batch(claims) == ["error", WRITEBACK_QUEUED, WRITEBACK_QUEUED]

    crashed = DeliverySchedule.objects.get(pk=claims[0][0])
    assert crashed.claimed_by and crashed.lease_until  # left to its lease: claimed again once it expires
    assert len([r for r in line.requests if r.path == PUSHES]) == 2


def test_a_batch_re_reads_its_issues_in_one_backlog_call(approved, line, fake_backlog, tenant):
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    keys = [approved(body()) for _ in range(3)]
    fake_backlog.delete_issue(keys[1])  # deleted since approval: not in the list answer
    fake_backlog.reset_requests()
    claims = claim_all()

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        results = tasks.deliver_batch(claims)

    assert results == [WRITEBACK_QUEUED, "no longer approved", WRITEBACK_QUEUED]
    reads = [r for r in fake_backlog.requests if r.method == "GET" and r.path.startswith("/api/v2/issues")]
    assert [r.path for r in reads] == [
        "/api/v2/issues",
        f"/api/v2/issues/{keys[1]}",
    ]  # the list, then the missing one
    assert sorted(reads[0].query["id[]"]) == sorted(
        str(i) for i in ContentTask.objects.values_list("issue_id", flat=True)
    )


def sql_of_one_batch_of_three(approved, tenant) -> list[str]:
    """Three approvals due at once, delivered by one batch: the SQL statements it ran."""
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    [approved(body()) for _ in range(3)]
    claims = claim_all()

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with (
        time_machine.travel(due + timedelta(seconds=0.5), tick=True),
        CaptureQueriesContext(connection) as sql,
    ):
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED] * 3
    return [q["sql"] for q in sql.captured_queries]


def test_a_live_workers_keeper_keeps_its_claim_across_a_platform_call_longer_than_the_lease(
    approved, line, tenant, settings
):
    key = approved(body())
    lease = timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    real, claimable = LineTransport._send, []

    def slow(transport, *args, **kwargs):  # LINE answers after three leases
        for _ in range(9):
            clock.shift(lease / 3)
            keeper.renew_held(timezone.now())  # the keeper's pass, each third of a lease
            claimable.append(schedules_claim(now=timezone.now()))
        return real(transport, *args, **kwargs)

    due = DeliverySchedule.objects.get(task__issue_key=key).due_at
    with (
        time_machine.travel(due + timedelta(seconds=0.5), tick=False) as clock,
        mock.patch.object(LineTransport, "_send", slow),
    ):
        assert tasks.deliver_batch(schedules_claim(now=timezone.now())) == [WRITEBACK_QUEUED]

    assert claimable == [[]] * 9  # nobody could take the row meanwhile
    assert len([r for r in line.requests if r.path == PUSHES]) == 1
    assert keeper.held() == []


@pytest.mark.django_db(transaction=True)
def test_a_hanging_delivery_does_not_delay_another_row_of_its_batch(monkeypatch):
    monkeypatch.setattr(core.keeper, "THREADS", True)
    tenant = TenantFactory(slug="acme", max_concurrent_deliveries=2)
    hanging, other = make_schedule(tenant, due_in=-2), make_schedule(tenant)
    claims = schedules_claim(now=timezone.now())
    started, released, other_done, results = threading.Event(), threading.Event(), threading.Event(), []

    def run(*, schedule_id, token, **kw):
        if schedule_id == hanging.pk:  # a LINE push that hangs for LINE_TIMEOUT_SECONDS
            started.set()
            released.wait(5)
            return "timed out"
        other_done.set()
        return "delivered"

    def task():
        results.append(tasks.deliver_batch(claims))
        connection.close()

    with mock.patch.object(tasks, "delivery_run", run):
        worker = threading.Thread(target=task)
        worker.start()
        try:
            assert other_done.wait(2)  # while the first one still hangs
            assert started.is_set() and not released.is_set() and worker.is_alive()
        finally:
            released.set()
            worker.join(5)

    assert [pk for pk, _ in claims] == [hanging.pk, other.pk]
    assert results == [["timed out", "delivered"]]


def test_a_batch_takes_its_delivery_locks_in_one_statement_and_leaves_none_behind(approved, line, tenant):
    table = DeliveryLock._meta.db_table
    sql = sql_of_one_batch_of_three(approved, tenant)
    assert len([q for q in sql if q.startswith(f"INSERT INTO {table}")]) == 1
    assert not DeliveryLock.objects.exists()


def test_a_row_whose_issue_another_live_run_holds_is_not_sent_by_the_batch(approved, line, tenant):
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    keys = [approved(body()) for _ in range(2)]
    claims = claim_all()
    held = DeliverySchedule.objects.get(task__issue_key=keys[0])
    # Another run holds the first issue's lock under a claim that is still alive (its
    # schedule row is the other run's: a stalled worker whose lease was taken over).
    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    other = approved(body())
    DeliverySchedule.objects.filter(task__issue_key=other).update(
        claimed_by="other-run", lease_until=due + timedelta(minutes=1)
    )
    DeliveryLock.objects.create(
        tenant=tenant, issue_key=keys[0], owner="other-run", taken_at=due, expires_at=due + timedelta(hours=1)
    )

    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        results = dict(zip([pk for pk, _ in claims], tasks.deliver_batch(claims), strict=True))

    assert results[held.pk] == "locked"
    assert results[claims[1][0]] == WRITEBACK_QUEUED
    assert len([r for r in line.requests if r.path == PUSHES]) == 1  # only the other issue's
    assert DeliveryLock.objects.get().owner == "other-run"  # not taken, not released by the batch


def test_a_chunk_accepted_before_another_failed_is_not_sent_again_by_the_next_batch(approved, line, tenant):
    """Two groups, two pushes: the first is accepted, the second fails and is retried. The
    retry's batch finds the accepted one (it is saved although the run stopped) and skips it."""
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    approved(body().replace("tag:active, !tag:opt_out", "group:Cabc123 | group:Cdef456"))
    real = LineTransport.push

    def second_group_down(self, *, to, **kwargs):
        if to == "Cdef456":
            raise TransportError("LINE が応答しません", permanent=False)
        return real(self, to=to, **kwargs)

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with (
        time_machine.travel(due + timedelta(seconds=0.5), tick=True),
        mock.patch.object(LineTransport, "push", second_group_down),
    ):
        assert tasks.deliver_batch(claim_all()) == ["retry in 30s"]

    with time_machine.travel(due + timedelta(seconds=31), tick=True):
        assert tasks.deliver_batch(schedules_claim(now=timezone.now())) == [WRITEBACK_QUEUED]

    pushed = [r.body["to"] for r in line.requests if r.path == "/v2/bot/message/push"]
    assert sorted(pushed) == ["Cabc123", "Cdef456"]  # each group once
    assert sorted(DeliveryAttempt.objects.values_list("outcome", flat=True)) == ["retry", "sent", "sent"]


def test_a_batch_refills_the_room_its_sends_freed_without_waiting_for_a_scheduler_pass(
    approved, line, tenant
):
    tenant.max_concurrent_deliveries = 2
    tenant.save()
    [approved(body()) for _ in range(5)]
    claims = claim_all()
    assert len(claims) == 2  # the tenant's limit

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED] * 2  # its own rows' results

    # The task went on with the tenant's next due sends, two at a time, as room freed.
    assert len([r for r in line.requests if r.path == PUSHES]) == 5
    assert not DeliverySchedule.objects.filter(stage=DeliverySchedule.Stage.DELIVER).exists()


def test_a_batch_refills_only_within_its_tenants_limit(approved, line, tenant):
    tenant.max_concurrent_deliveries = 2
    tenant.save()
    [approved(body()) for _ in range(3)]
    [first, _] = claim_all()
    due = DeliverySchedule.objects.order_by("due_at").first().due_at

    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        assert tasks.deliver_batch([first]) == [WRITEBACK_QUEUED]

    # The other claim still holds its room: the refill took one row, not two.
    assert len([r for r in line.requests if r.path == PUSHES]) == 2
    assert DeliverySchedule.objects.filter(stage=DeliverySchedule.Stage.DELIVER).count() == 1


def test_a_batch_gives_its_worker_back_instead_of_refilling_while_another_tenants_send_waits(
    approved, line, tenant
):
    tenant.max_concurrent_deliveries = 2
    tenant.save()
    [approved(body()) for _ in range(5)]
    claims = claim_all()
    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    make_schedule(TenantFactory(slug="neighbour"), due_in=-1)  # due, its task not yet started

    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED] * 2

    assert len([r for r in line.requests if r.path == PUSHES]) == 2  # no refill: the worker is free
    assert DeliverySchedule.objects.filter(tenant=tenant, stage=DeliverySchedule.Stage.DELIVER).count() == 3

"""`deliver_batch`: the schedules one scheduler pass claimed, delivered in one task."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from deliveries import tasks
from deliveries.delivery import WRITEBACK_QUEUED
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.scheduler import schedules_claim
from tests.helpers.backlog import body

PUSHES = "/v2/bot/message/multicast"


def claim_all() -> list[tuple[int, str]]:
    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=False):
        return schedules_claim(now=timezone.now())


def test_it_sends_a_burst_first_and_writes_each_back_once_after(approved, line, fake_backlog, tenant):
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    keys = [approved(body()) for _ in range(3)]
    claims = claim_all()

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with time_machine.travel(due + timedelta(seconds=0.5), tick=True):
        # While others are due, a sent delivery leaves its write-back for the next claim.
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED, WRITEBACK_QUEUED, "delivered"]
        assert len([r for r in line.requests if r.path == PUSHES]) == 3
        assert len([r for r in fake_backlog.requests if r.method == "PATCH"]) == 1

        assert tasks.deliver_batch(schedules_claim(now=timezone.now())) == ["delivered"] * 2

    assert len([r for r in line.requests if r.path == PUSHES]) == 3
    assert not DeliverySchedule.objects.filter(task__issue_key__in=keys).exists()
    patches = [r for r in fake_backlog.requests if r.method == "PATCH"]
    assert sorted(r.path.rsplit("/", 1)[-1] for r in patches) == sorted(keys)


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

    assert results == [WRITEBACK_QUEUED, "no longer approved", "delivered"]
    reads = [r for r in fake_backlog.requests if r.method == "GET" and r.path.startswith("/api/v2/issues")]
    assert [r.path for r in reads] == [
        "/api/v2/issues",
        f"/api/v2/issues/{keys[1]}",
    ]  # the list, then the missing one
    assert sorted(reads[0].query["id[]"]) == sorted(
        str(i) for i in ContentTask.objects.values_list("issue_id", flat=True)
    )


def test_a_send_followed_by_others_in_its_batch_does_not_ask_the_database_whether_others_are_due(
    approved, line, tenant
):
    tenant.max_concurrent_deliveries = 10
    tenant.save()
    [approved(body()) for _ in range(3)]
    claims = claim_all()

    due = DeliverySchedule.objects.order_by("due_at").first().due_at
    with (
        time_machine.travel(due + timedelta(seconds=0.5), tick=True),
        CaptureQueriesContext(connection) as sql,
    ):
        assert tasks.deliver_batch(claims) == [WRITEBACK_QUEUED, WRITEBACK_QUEUED, "delivered"]

    table = DeliverySchedule._meta.db_table
    asked = [q["sql"] for q in sql.captured_queries if q["sql"].startswith(f'SELECT 1 AS "a" FROM "{table}"')]
    assert len(asked) == 1  # only the batch's last send looks for other due rows

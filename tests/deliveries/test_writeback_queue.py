"""The write-backs' queue: claimed apart from the sends, one tenant at a time, paced by
Backlog's rate-limit headers, never in a send's way."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import time_machine
from django.utils import timezone

from core.http import ClientCache
from deliveries import tasks
from deliveries.models import DeliverySchedule
from deliveries.publish.delivery import WRITEBACK_QUEUED
from deliveries.publish.scheduler import schedules_claim
from deliveries.writeback.queue import writebacks_claim, writebacks_step
from tests.helpers.backlog import body
from tests.helpers.deliveries import DUE, write_backs

WRITEBACK = DeliverySchedule.Stage.WRITEBACK
AFTER_DUE = DUE + timedelta(seconds=0.5)


def sent_all(count: int, approved) -> list[str]:
    """`count` approvals due at DUE, sent by one batch: their rows wait for write-back."""
    keys = [approved(body()) for _ in range(count)]
    with time_machine.travel(AFTER_DUE, tick=True):
        assert tasks.deliver_batch(schedules_claim(now=timezone.now())) == [WRITEBACK_QUEUED] * count
    return keys


def test_it_hands_one_tenants_write_backs_to_one_task_and_no_more_while_it_runs(approved, line, settings):
    settings.WRITEBACK_BATCH = 2
    sent_all(3, approved)

    with time_machine.travel(AFTER_DUE + timedelta(seconds=1), tick=True):
        [first] = writebacks_claim(now=timezone.now(), limit=50)
        assert len(first) == 2  # WRITEBACK_BATCH
        assert writebacks_claim(now=timezone.now(), limit=50) == []  # one tenant's write-backs in series
        with mock.patch("django_q.tasks.async_task") as enqueue:
            assert writebacks_step(now=timezone.now(), limit=50) is False
    assert not enqueue.called


def test_the_write_back_step_enqueues_on_the_default_queue_not_the_deliverers(approved, line):
    sent_all(2, approved)

    with (
        time_machine.travel(AFTER_DUE + timedelta(seconds=1), tick=True),
        mock.patch("django_q.tasks.async_task") as enqueue,
    ):
        assert writebacks_step(now=timezone.now(), limit=50) is True

    [call] = enqueue.call_args_list
    assert call.args[0] == "deliveries.tasks.writeback_batch" and len(call.args[1]) == 2
    assert "cluster" not in call.kwargs


def test_a_write_back_delayed_by_backlogs_limit_never_delays_the_next_publish(approved, line, fake_backlog):
    ClientCache.clear_all()  # a paced client that has seen no budget yet
    keys = sent_all(3, approved)
    later = approved(body(when="2026-12-10 10:00:10"))  # before the window restarts
    fake_backlog.set_rate_limits(read=1000, update=2, window=60)
    fake_backlog.reset_requests()

    with time_machine.travel(AFTER_DUE + timedelta(seconds=1), tick=True):
        results = write_backs()
        paced = DeliverySchedule.objects.get(stage=WRITEBACK)
        assert paced.lease_until is None and paced.due_at > timezone.now()  # due again at the reset
    written = [k for k in keys if fake_backlog.issue(k)["status"]["name"] == "automedia実行済み"]
    assert sorted(results.values())[:2] == ["delivered", "delivered"]
    assert results[paced.pk].startswith("write-back paced")
    assert len(written) == 2 and paced.task.issue_key not in written
    # The next send of the same tenant goes out at its due second all the same.
    due = DeliverySchedule.objects.get(task__issue_key=later).due_at
    with time_machine.travel(due + timedelta(seconds=0.1), tick=True):
        assert tasks.deliver_batch(schedules_claim(now=timezone.now())) == [WRITEBACK_QUEUED]
        # Its write-back waits with the paced one: no process writes before the window restarts.
        assert writebacks_claim(now=timezone.now(), limit=50) == []
    assert len(line.sent()) == 4
    assert all(r.status != 429 for r in fake_backlog.requests)


def test_a_tenants_write_backs_wait_while_it_has_sends_due_and_unclaimed(approved, line):
    sent_all(2, approved)
    approved(body())  # due at the same second, not claimed yet (a burst still going out)

    with time_machine.travel(AFTER_DUE + timedelta(seconds=1), tick=True):
        assert writebacks_claim(now=timezone.now(), limit=50) == []
        assert len(schedules_claim(now=timezone.now())) == 1  # the last send is on its way
        [rows] = writebacks_claim(now=timezone.now(), limit=50)

    assert len(rows) == 2

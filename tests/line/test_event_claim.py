"""LINE webhook events are acted on under a claim (core/due.py): the broker's task, the
retry job and the scheduler's drain may all reach one event, and only one acts."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone

from core.due import claim_one
from core.intake import CLAIMED_ELSEWHERE, EVENT_CLAIM
from core.keeper import keeper
from line import events
from line.events import (
    LINE_EVENTS,
    line_event_process,
    line_events_drain,
    line_events_retry,
    line_events_stranded_step,
)
from line.models import LineWebhookEvent
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored():
    tenant = TenantFactory()
    return [
        LineWebhookEvent.objects.create(
            tenant=tenant, webhook_event_id=f"e{n}", type="follow", payload={"n": n}
        )
        for n in range(2)
    ]


def handled_by(handler):
    return mock.patch.dict(events.HANDLERS, {"follow": handler})


def test_two_drains_never_process_the_same_line_event(stored):
    acted_on = []
    second_drain = []

    def follow(tenant, payload, transport):
        acted_on.append(payload["n"])
        if not second_drain:  # another worker's drain starts while this one acts on the event
            second_drain.append(line_events_drain())
        return "ok"

    with handled_by(follow):
        first_drain = line_events_drain()

    assert sorted(acted_on) == [0, 1]  # each event once, by whichever drain claimed it
    assert first_drain + second_drain[0] == 2
    assert set(LineWebhookEvent.objects.values_list("outcome", "attempts", "claimed_until")) == {
        ("done", 1, None)
    }


def test_a_task_for_an_event_another_worker_holds_does_nothing(stored):
    event = stored[0]
    handler = mock.Mock(return_value="ok")
    with handled_by(handler):
        inner = []
        handler.side_effect = lambda *a: inner.append(line_event_process(event_id=event.pk)) or "ok"
        assert line_event_process(event_id=event.pk) == "done"

    assert inner == [CLAIMED_ELSEWHERE]
    assert handler.call_count == 1


def test_a_failing_event_is_failed_and_due_again_on_the_ladder(stored):
    event = stored[0]
    with handled_by(mock.Mock(side_effect=RuntimeError("LINE down"))):
        assert line_event_process(event_id=event.pk) == "failed"
    event.refresh_from_db()
    assert (event.outcome, event.attempts, event.detail) == ("failed", 1, "RuntimeError: LINE down")
    assert event.claimed_until - event.processed_at == timedelta(seconds=10)

    with handled_by(mock.Mock(return_value="ok")), time_machine.travel(timezone.now() + timedelta(minutes=2)):
        assert line_events_retry() == 2
    event.refresh_from_db()
    assert (event.outcome, event.attempts) == ("done", 2)


def test_the_scheduler_step_drains_events_no_worker_took(stored, monkeypatch):
    monkeypatch.setattr(LINE_EVENTS, "stranded_checked_at", float("-inf"))
    with mock.patch("django_q.tasks.async_task") as enqueue:
        assert line_events_stranded_step(now=timezone.now(), limit=50) is False
        assert enqueue.call_count == 0  # younger than 2 s: its own task may be on its way

        later = timezone.now() + timedelta(seconds=3)
        monkeypatch.setattr(LINE_EVENTS, "stranded_checked_at", float("-inf"))
        line_events_stranded_step(now=later, limit=50)
        line_events_stranded_step(now=later, limit=50)  # looks again only after 2 s

    enqueue.assert_called_once_with("line.tasks.process_line_events")


def test_run_scheduler_runs_the_line_events_step():
    from deliveries.scheduler_steps import scheduler_steps

    assert line_events_stranded_step in scheduler_steps()


def test_an_event_whose_worker_died_is_drained_again_within_seconds(stored):
    event = stored[0]
    now = timezone.now()
    assert claim_one(LineWebhookEvent, pk=event.pk, now=now, lease=EVENT_CLAIM, attempts=1)
    # … and the worker is killed while its handler runs: the hold is never released.

    with handled_by(mock.Mock(return_value="ok")):
        with time_machine.travel(now + timedelta(seconds=4)):
            assert line_events_drain() == 1  # only the other event: this one is still held
        with time_machine.travel(now + timedelta(seconds=6)):
            assert line_events_drain() == 1
    event.refresh_from_db()
    assert (event.outcome, event.attempts) == ("done", 2)


def test_a_live_workers_keeper_holds_an_event_across_a_handler_longer_than_the_lease(stored, settings):
    event, seen = stored[0], []
    lease = timedelta(seconds=settings.EVENT_LEASE_SECONDS)

    def slow(tenant, payload, transport):  # a LINE reply that takes three leases
        for _ in range(9):
            clock.shift(lease / 3)
            keeper.renew_held(timezone.now())  # the keeper's pass, each third of a lease
            seen.append(line_event_process(event_id=event.pk))
        return "ok"

    with handled_by(slow), time_machine.travel(timezone.now(), tick=False) as clock:
        assert line_event_process(event_id=event.pk) == "done"

    assert seen == [CLAIMED_ELSEWHERE] * 9

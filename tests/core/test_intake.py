"""The stored events' intake both apps configure: one store (once per the model's unique
constraint), one enqueue rule (a drain once per request), one drain rule (due while pending
or failed, attempts left, free), failures on the webhook_event ladder, and every event ending."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.intake import (
    CLAIMED_ELSEWHERE,
    EVENT_CLAIM,
    MAX_EVENT_ATTEMPTS,
    EventIgnored,
    EventIntake,
    EventRejected,
)
from core.models import Tenant
from core.statements import Held
from line.models import LineWebhookEvent
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

DRAIN = "tests.core.drain"


class Provider(Exception):
    """A failure the handler expects (a provider's error)."""


def intake(handle, **options) -> EventIntake:
    return EventIntake(
        model=LineWebhookEvent,
        handle=handle,
        drain_task=DRAIN,
        name="test event",
        expected=(Provider,),
        **options,
    )


@pytest.fixture
def tenant():
    return TenantFactory()


def stored(tenant, n: int = 1, **fields) -> LineWebhookEvent:
    return LineWebhookEvent.objects.create(
        tenant=tenant, webhook_event_id=f"e{n}", type="follow", payload={"n": n}, **fields
    )


def test_it_acts_on_an_event_once_under_a_claim_and_records_the_handlers_detail(tenant):
    event = stored(tenant)
    handle = mock.Mock(return_value="acted")

    assert intake(handle).process(event_id=event.pk, tool="client") == "done"

    handle.assert_called_once()
    assert handle.call_args.kwargs == {"tool": "client"}
    event.refresh_from_db()
    assert (event.outcome, event.detail, event.attempts, event.claimed_until) == ("done", "acted", 1, None)
    assert intake(handle).process(event_id=event.pk) == "done" and handle.call_count == 1


@pytest.mark.parametrize(("error", "outcome"), [(EventIgnored, "ignored"), (EventRejected, "rejected")])
def test_an_ignored_or_rejected_event_ends_at_once_with_the_reason(tenant, error, outcome):
    event = stored(tenant)

    assert intake(mock.Mock(side_effect=error("why"))).process(event_id=event.pk) == outcome

    event.refresh_from_db()
    assert (event.outcome, event.detail, event.attempts, event.claimed_until) == (outcome, "why", 1, None)


@pytest.mark.parametrize(
    ("error", "reason"), [(Provider("HTTP 503"), "HTTP 503"), (KeyError("x"), "KeyError: 'x'")]
)
def test_a_failed_attempt_is_due_again_at_the_ladders_first_step(tenant, error, reason):
    event = stored(tenant)
    handle = mock.Mock(side_effect=[error, "acted"])
    events = intake(handle)

    with time_machine.travel(timezone.now(), tick=False) as clock:
        assert events.process(event_id=event.pk) == "failed"
        event.refresh_from_db()
        assert (event.outcome, event.detail, event.attempts) == ("failed", reason, 1)
        assert event.claimed_until == timezone.now() + timedelta(seconds=10)
        assert events.drain() == 0  # not before its retry time
        clock.shift(timedelta(seconds=10))
        assert events.drain() == 1

    event.refresh_from_db()
    assert (event.outcome, event.attempts) == ("done", 2)


def test_a_failures_detail_keeps_no_api_key_its_message_printed(tenant):
    event = stored(tenant)
    error = RuntimeError("GET https://acme.backlog.jp/api/v2/issues/ACME-1?apiKey=s3cr3t-key answered 502")

    assert intake(mock.Mock(side_effect=error)).process(event_id=event.pk) == "failed"

    event.refresh_from_db()
    assert (
        event.detail
        == "RuntimeError: GET https://acme.backlog.jp/api/v2/issues/ACME-1?apiKey=**** answered 502"
    )


def test_the_attempt_before_the_last_fails_for_a_retry(tenant):
    event = stored(tenant, attempts=MAX_EVENT_ATTEMPTS - 2, outcome="failed")

    assert intake(mock.Mock(side_effect=Provider("HTTP 503"))).process(event_id=event.pk) == "failed"

    event.refresh_from_db()
    assert (event.outcome, event.attempts) == ("failed", MAX_EVENT_ATTEMPTS - 1)


def test_the_last_failed_attempt_ends_rejected_with_the_reason(tenant):
    event = stored(tenant, attempts=MAX_EVENT_ATTEMPTS - 1, outcome="failed")

    assert intake(mock.Mock(side_effect=Provider("HTTP 503"))).process(event_id=event.pk) == "rejected"

    event.refresh_from_db()
    assert (event.outcome, event.attempts, event.claimed_until) == ("rejected", MAX_EVENT_ATTEMPTS, None)
    assert event.detail == f"gave up after {MAX_EVENT_ATTEMPTS} attempts: HTTP 503"


def test_due_means_pending_or_failed_with_attempts_left_and_free(tenant):
    now = timezone.now()
    due = {
        stored(tenant, 1),  # never taken
        stored(tenant, 2, attempts=1, claimed_until=now - timedelta(seconds=1)),  # its worker died
        stored(tenant, 3, outcome="failed", attempts=2, claimed_until=now),  # its retry time came
    }
    stored(tenant, 4, attempts=1, claimed_until=now + timedelta(seconds=3))  # held
    stored(tenant, 5, outcome="failed", attempts=1, claimed_until=now + timedelta(seconds=9))  # retry later
    stored(tenant, 6, attempts=MAX_EVENT_ATTEMPTS)  # no attempt left: the sweep's
    stored(tenant, 7, outcome="done", attempts=1)

    assert set(intake(mock.Mock()).due(now)) == due


def test_a_drain_takes_every_due_event_in_arrival_order_and_goes_on_past_an_error(tenant):
    events = [stored(tenant, n) for n in range(3)]
    seen = []

    def handle(event):
        seen.append(event.pk)
        return "acted"

    drain = intake(handle)
    real = drain.process

    def process(**kw):
        if kw["event_id"] == events[1].pk:
            raise RuntimeError("the database went away")  # outside the handler, before the claim
        return real(**kw)

    drain.process = process

    assert drain.drain() == 2

    assert seen == [events[0].pk, events[2].pk]
    assert LineWebhookEvent.objects.get(pk=events[1].pk).outcome == "pending"  # due again next drain


def test_a_drain_over_its_budget_hands_the_rest_to_a_new_drain(tenant):
    for n in range(3):
        stored(tenant, n)
    drain = intake(mock.Mock(return_value="acted"))
    drain.batch = 2

    with mock.patch("django_q.tasks.async_task") as enqueue:
        assert drain.drain(budget=-1.0) == 2

    enqueue.assert_called_once_with(DRAIN)


def test_the_settled_hook_writes_its_columns_when_the_event_ends_only(tenant):
    event = stored(tenant)
    blank = mock.Mock(return_value={"payload": {}})
    handle = mock.Mock(side_effect=[Provider("down"), "acted"])
    events = intake(handle, on_settled=blank)

    events.process(event_id=event.pk)
    event.refresh_from_db()
    assert event.payload == {"n": 1} and blank.call_count == 0

    with time_machine.travel(timezone.now() + timedelta(seconds=11)):
        assert events.process(event_id=event.pk) == "done"
    event.refresh_from_db()
    assert event.payload == {} and blank.call_count == 1


def test_the_stranded_step_drains_an_event_due_longer_than_two_seconds(tenant):
    events = intake(mock.Mock())
    now = timezone.now()
    stored(tenant, 1, outcome="failed", attempts=1, claimed_until=now + timedelta(seconds=10))

    with mock.patch("django_q.tasks.async_task") as enqueue:
        assert events.stranded_drain(now=now) is False  # its retry time has not come
        events.stranded_checked_at = float("-inf")
        assert events.stranded_step(now=now + timedelta(seconds=10), limit=50) is False  # the drain works
        assert events.stranded_drain(now=now + timedelta(seconds=10)) is False  # looks every 2 s

    enqueue.assert_called_once_with(DRAIN)


def test_the_sweep_ends_an_event_with_no_attempt_left_and_runs_the_due_ones(tenant):
    now = timezone.now()
    exhausted = stored(tenant, 1, attempts=MAX_EVENT_ATTEMPTS)
    held = stored(tenant, 2, attempts=MAX_EVENT_ATTEMPTS, claimed_until=now + timedelta(minutes=10))
    lost = stored(tenant, 3)
    events = intake(mock.Mock(return_value="acted"))

    with time_machine.travel(now + timedelta(minutes=2)):
        assert events.sweep() == 1

    outcomes = dict(LineWebhookEvent.objects.values_list("pk", "outcome"))
    assert (outcomes[exhausted.pk], outcomes[held.pk], outcomes[lost.pk]) == ("rejected", "pending", "done")
    exhausted.refresh_from_db()
    assert exhausted.detail == f"gave up after {MAX_EVENT_ATTEMPTS} attempts with no outcome"


def test_a_task_for_an_event_another_worker_holds_does_nothing(tenant):
    event = stored(tenant, attempts=1, claimed_until=EVENT_CLAIM.ends(timezone.now()))
    handle = mock.Mock()

    assert intake(handle).process(event_id=event.pk) == CLAIMED_ELSEWHERE
    assert handle.call_count == 0


# -- storing what a webhook received --------------------------------------------------------


def received(tenant, n: int = 1, **fields) -> LineWebhookEvent:
    """A received event, not stored yet."""
    return LineWebhookEvent(
        tenant=tenant, webhook_event_id=f"e{n}", type="follow", payload={"n": n}, **fields
    )


def test_it_stores_an_event_once_and_tells_a_redelivery(tenant):
    events = intake(mock.Mock())

    assert events.store(received(tenant)) is True
    assert events.store(received(tenant)) is False  # the same tenant and event id
    assert events.store(received(TenantFactory())) is True  # another tenant's

    assert LineWebhookEvent.objects.filter(webhook_event_id="e1").count() == 2


def test_a_refusal_other_than_a_redelivery_is_raised_not_taken_for_one(tenant):
    with pytest.raises(IntegrityError):
        intake(mock.Mock()).store(received(tenant, attempts=-1))  # a CHECK, not the unique constraint

    assert not LineWebhookEvent.objects.exists()


def test_it_stores_nothing_unless_the_row_it_needs_is_held(tenant):
    events = intake(mock.Mock())

    assert (
        events.store(received(tenant, 1), held=Held(Tenant, {"id": tenant.pk, "is_active": False})) is False
    )
    assert events.store(received(tenant, 2), held=Held(Tenant, {"id": tenant.pk, "is_active": True})) is True

    assert list(LineWebhookEvent.objects.values_list("webhook_event_id", flat=True)) == ["e2"]


def test_a_redelivery_inside_a_transaction_leaves_it_usable(tenant):
    events = intake(mock.Mock())

    with transaction.atomic():
        assert events.store(received(tenant, 1)) is True
        assert events.store(received(tenant, 1)) is False
        assert events.store(received(tenant, 2)) is True  # PostgreSQL refuses this in an aborted one

    assert LineWebhookEvent.objects.count() == 2


def test_a_request_that_stored_pending_events_enqueues_one_drain_as_it_ends(tenant):
    events = intake(mock.Mock())

    with mock.patch("django_q.tasks.async_task") as enqueue:
        with events.receiving() as request:
            for n in range(3):
                request.store(received(tenant, n))
            assert enqueue.call_count == 0  # not before the request stored its last event
        assert request.pending == 3

    enqueue.assert_called_once_with(DRAIN)


def test_a_request_that_stored_no_pending_event_enqueues_nothing(tenant):
    events = intake(mock.Mock())
    events.store(received(tenant, 1))
    settled = LineWebhookEvent.finished(outcome="rejected", detail="odd")

    with mock.patch("django_q.tasks.async_task") as enqueue, events.receiving() as request:
        assert request.store(received(tenant, 1)) is False  # a redelivery
        assert request.store(received(tenant, 2, **settled)) is True  # stored, already settled

    assert request.pending == 0 and enqueue.call_count == 0


def test_within_its_window_a_process_enqueues_one_drain(tenant):
    events = intake(mock.Mock(), drain_window=lambda: 60.0)

    with mock.patch("django_q.tasks.async_task") as enqueue:
        for n in range(3):
            with events.receiving() as request:
                request.store(received(tenant, n))

    enqueue.assert_called_once_with(DRAIN)
    assert LineWebhookEvent.objects.count() == 3  # the stranded-events step takes what waits


def test_with_redis_the_drain_is_enqueued_after_the_commit(
    tenant, settings, django_capture_on_commit_callbacks
):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    events = intake(mock.Mock())

    with mock.patch("django_q.tasks.async_task") as enqueue:
        with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
            with events.receiving() as request:
                request.store(received(tenant))
            assert enqueue.call_count == 0  # Redis would hand it to a worker before the event commits
        assert len(callbacks) == 1
        callbacks[0]()

    enqueue.assert_called_once_with(DRAIN)

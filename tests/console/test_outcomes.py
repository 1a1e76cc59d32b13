"""The dashboard's delivery outcomes: recorded ones, and those derived for deliveries without a record.

Deliveries that ended before `DeliveryOutcome` rows existed were run by
`delivery_run` alone (the django-q2 task did not record anything yet): the tests
below run it that way, or write the rows it leaves, and expect them in the chart.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from console.dashboard import dashboard_build
from console.models import DeliveryOutcome
from console.outcomes import Ending, delivery_endings, derived_endings, unaccounted
from deliveries.channels.models import ChannelPost
from deliveries.models import STATUS_APPROVED, STATUS_DELIVERED, STATUS_ERROR, DeliveryAttempt
from tests.helpers.deliveries import DUE, MULTICAST, fire, run_task
from tests.helpers.factories import ChannelPostFactory, ContentTaskFactory

SENT, FAILED, SKIPPED = DeliveryOutcome.Kind.SENT, DeliveryOutcome.Kind.FAILED, DeliveryOutcome.Kind.SKIPPED
LATER = DUE + timedelta(days=2)  # the chart's 7 days include DUE's


def chart_of(user) -> dict[str, list[int]]:
    deliveries = dashboard_build(user=user, now=LATER).deliveries
    assert deliveries.labels[-3] == "12/10"
    return {s.key: s.values for s in deliveries.series}


def attempt(task, outcome: str, at: datetime, *, seq: int = 1, chunk: int = 0) -> DeliveryAttempt:
    with time_machine.travel(at, tick=False):
        return DeliveryAttempt.objects.create(
            tenant=task.tenant,
            task=task,
            approval_seq=seq,
            chunk=chunk,
            channel="line",
            endpoint=MULTICAST,
            outcome=outcome,
        )


def endings(task) -> list[tuple[str, datetime]]:
    found = derived_endings(attempts=DeliveryAttempt.objects.filter(task=task), since=DUE - timedelta(days=7))
    return [(e.kind, e.at) for e in sorted(found, key=lambda e: e.at)]


# -- through the delivery engine, as before outcomes were recorded ------------------------


def test_it_charts_deliveries_that_ended_before_outcomes_were_recorded(approved, line, manager, monkeypatch):
    monkeypatch.setattr("console.records.delivery_outcome_record", lambda **kwargs: None)  # not yet recorded
    assert fire(approved()) == "delivered"
    line.fail_next(400, path_prefix=MULTICAST)
    assert fire(approved()) == "failed"
    assert not DeliveryOutcome.objects.exists()

    chart = chart_of(manager)

    assert chart["sent"][-3] == 1 and chart["failed"][-3] == 1
    assert sum(chart["sent"]) + sum(chart["failed"]) + sum(chart["skipped"]) == 2


def test_it_shows_them_on_the_dashboard(approved, line, as_manager, manager):
    fire(approved())

    with time_machine.travel(LATER, tick=False):
        as_manager.force_login(manager)  # the session of before has been idle too long by then
        html = as_manager.get(reverse("admin:index")).content.decode()

    assert "<title>12/10 送信済み: 1</title>" in html


def test_it_counts_a_recorded_delivery_once(approved, manager):
    key = approved()
    assert run_task(key) == "delivered"
    assert DeliveryOutcome.objects.get().kind == SENT

    chart = chart_of(manager)

    assert sum(chart["sent"]) == 1 and chart["sent"][-3] == 1


def test_it_leaves_out_another_tenants_deliveries(approved, other_manager):
    fire(approved())

    chart = chart_of(other_manager)

    assert sum(chart["sent"]) == 0


# -- what the rows of older deliveries tell ---------------------------------------------


@pytest.mark.django_db
def test_it_dates_a_delivered_approval_by_its_delivery_time():
    task = ContentTaskFactory(approval_seq=1, delivered_at=DUE, status_name=STATUS_DELIVERED)
    attempt(task, "sent", DUE - timedelta(seconds=2), chunk=0)
    attempt(task, "sent", DUE - timedelta(seconds=1), chunk=1)

    assert endings(task) == [(SENT, DUE)]


@pytest.mark.django_db
def test_it_counts_every_approval_of_a_task_sent_again():
    """A manager cleared 自動配信実行日時 and approved again: two deliveries, the first no longer on the task."""
    task = ContentTaskFactory(approval_seq=2, delivered_at=DUE, status_name=STATUS_DELIVERED)
    attempt(task, "sent", DUE - timedelta(days=1), seq=1)
    attempt(task, "sent", DUE, seq=2)

    assert endings(task) == [(SENT, DUE - timedelta(days=1)), (SENT, DUE)]


@pytest.mark.django_db
def test_it_counts_a_failure_that_was_approved_again():
    task = ContentTaskFactory(approval_seq=2, status_name=STATUS_APPROVED)
    attempt(task, "retry", DUE - timedelta(days=1), seq=1)
    attempt(task, "failed", DUE - timedelta(days=1, seconds=-30), seq=1)
    attempt(task, "retry", DUE, seq=2)  # the new approval is still being retried

    assert endings(task) == [(FAILED, DUE - timedelta(days=1, seconds=-30))]


@pytest.mark.django_db
def test_it_counts_retries_that_ran_out():
    task = ContentTaskFactory(approval_seq=2, status_name=STATUS_APPROVED)
    for n in range(6):  # the first try and 5 retries
        attempt(task, "retry", DUE - timedelta(days=1) + timedelta(minutes=n), seq=1)

    assert endings(task) == [(FAILED, DUE - timedelta(days=1) + timedelta(minutes=5))]


@pytest.mark.django_db
def test_it_counts_the_current_approval_as_failed_once_the_task_is_in_error():
    task = ContentTaskFactory(approval_seq=1, status_name=STATUS_ERROR)
    attempt(task, "retry", DUE)

    assert endings(task) == [(FAILED, DUE)]


@pytest.mark.django_db
def test_it_does_not_count_a_delivery_still_being_retried_or_cancelled():
    retrying = ContentTaskFactory(approval_seq=1, status_name=STATUS_APPROVED)
    attempt(retrying, "retry", DUE)
    cancelled = ContentTaskFactory(approval_seq=2, status_name=STATUS_APPROVED)
    attempt(cancelled, "retry", DUE, seq=1)

    assert endings(retrying) == [] and endings(cancelled) == []


@pytest.mark.django_db
def test_it_reads_an_earlier_publication_from_its_channel_post():
    task = ContentTaskFactory(approval_seq=3, status_name=STATUS_APPROVED)
    ChannelPostFactory(task=task, approval_seq=1, phase=ChannelPost.Phase.DONE, published_at=DUE)
    attempt(task, "sent", DUE - timedelta(minutes=1), seq=1)
    ChannelPostFactory(task=task, approval_seq=2, phase=ChannelPost.Phase.PROCESSING)
    attempt(task, "sent", DUE + timedelta(hours=1), seq=2)  # a status check, then a failure
    attempt(task, "failed", DUE + timedelta(hours=2), seq=2)

    assert endings(task) == [(SENT, DUE), (FAILED, DUE + timedelta(hours=2))]


# -- recorded and derived together -----------------------------------------------------


def ending(kind: str, at: datetime, task_id: int = 1) -> Ending:
    return Ending(task_id, kind, at)


def test_a_record_accounts_for_the_latest_ending_before_it():
    older, newer = ending(FAILED, DUE - timedelta(hours=5)), ending(FAILED, DUE)
    record = ending(FAILED, DUE + timedelta(minutes=10))

    assert unaccounted(derived=[older, newer], recorded=[record]) == [older]


def test_a_record_accounts_only_for_its_own_task_and_kind():
    derived = [ending(SENT, DUE), ending(FAILED, DUE, task_id=2)]
    records = [
        ending(FAILED, DUE + timedelta(seconds=1)),
        ending(SKIPPED, DUE + timedelta(seconds=1), task_id=2),
    ]

    assert unaccounted(derived=derived, recorded=records) == derived


def test_a_record_does_not_account_for_an_ending_long_before_it():
    """A failure before any request went out is recorded without a derived twin."""
    old = ending(FAILED, DUE - timedelta(days=3))

    assert unaccounted(derived=[old], recorded=[ending(FAILED, DUE)]) == [old]


@pytest.mark.django_db
def test_it_adds_recorded_endings_without_any_attempt(manager, tenant):
    task = ContentTaskFactory(tenant=tenant, approval_seq=1, status_name=STATUS_ERROR)
    with time_machine.travel(DUE, tick=False):
        DeliveryOutcome.objects.create(tenant=tenant, task=task, kind=FAILED, detail="failed")

    found = delivery_endings(user=manager, since=DUE - timedelta(days=1))

    assert [(e.kind, e.at) for e in found] == [(FAILED, DUE)]


@pytest.mark.django_db
def test_it_reads_only_the_endings_before_until(manager, tenant):
    """The calendar's periods: a record or an attempt after `until` belongs to a later page."""
    early = ContentTaskFactory(tenant=tenant, approval_seq=1, delivered_at=DUE, status_name=STATUS_DELIVERED)
    attempt(early, "sent", DUE)
    late = ContentTaskFactory(tenant=tenant, approval_seq=1, delivered_at=LATER, status_name=STATUS_DELIVERED)
    attempt(late, "sent", LATER)
    with time_machine.travel(LATER, tick=False):
        DeliveryOutcome.objects.create(tenant=tenant, task=late, kind=SENT, detail="delivered")

    found = delivery_endings(user=manager, since=DUE - timedelta(days=1), until=DUE + timedelta(days=1))

    assert [(e.task_id, e.kind, e.at) for e in found] == [(early.pk, SENT, DUE)]

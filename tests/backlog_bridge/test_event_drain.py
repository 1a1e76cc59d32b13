"""Webhook events as a queue: the view stores, drain tasks process every pending event
under a per-event claim, and run_scheduler drains events no drain took."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import respx
import time_machine
from django.utils import timezone

from backlog_bridge import events
from backlog_bridge.events import BACKLOG_EVENTS, event_process, events_drain
from backlog_bridge.models import BacklogEvent
from core.due import claim_one
from core.intake import CLAIMED_ELSEWHERE, EVENT_CLAIM
from deliveries.models import DeliverySchedule
from tests.helpers.backlog import body, webhook_url


@pytest.fixture
def enqueued(monkeypatch):
    calls = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: calls.append(args))
    return calls


@pytest.fixture
def approvals(fake_backlog, tenant):
    """Three approved issues whose approval webhooks wait in the fake's outbox."""
    keys = []
    for n in range(3):
        key = fake_backlog.create_issue("ACME", summary=f"告知{n}", description=body(), status="処理中")[
            "issueKey"
        ]
        fake_backlog.update_issue(key, status="automedia承認")
        keys.append(key)
    return keys


def post_all(client, tenant, fake_backlog) -> list[int]:
    codes = []
    while fake_backlog.outbox:
        payload = fake_backlog.outbox.pop(0)
        codes.append(
            client.post(webhook_url(tenant), data=payload, content_type="application/json").status_code
        )
    return codes


def test_a_burst_of_webhooks_enqueues_one_drain_per_window(
    client, tenant, fake_backlog, approvals, enqueued, settings, monkeypatch
):
    settings.BACKLOG_EVENT_BATCH_SECONDS = 60.0
    monkeypatch.setattr(BACKLOG_EVENTS, "drain_requested_at", float("-inf"))

    codes = post_all(client, tenant, fake_backlog)

    assert set(codes) == {200} and len(codes) == 6  # created + status change per issue
    assert enqueued == [("backlog_bridge.tasks.process_events",)]
    assert set(BacklogEvent.objects.values_list("outcome", flat=True)) == {"pending"}


def test_one_drain_processes_every_pending_event_in_arrival_order(
    client, tenant, fake_backlog, approvals, enqueued
):
    post_all(client, tenant, fake_backlog)

    with mock.patch.object(BACKLOG_EVENTS, "process", wraps=BACKLOG_EVENTS.process) as process:
        assert events_drain() == 6

    ids = [call.kwargs["event_id"] for call in process.call_args_list]
    assert ids == sorted(ids)
    assert set(BacklogEvent.objects.values_list("outcome", "claimed_until")) == {("done", None)}
    assert DeliverySchedule.objects.filter(task__issue_key__in=approvals).count() == 3
    assert events_drain() == 0


def test_an_event_held_by_another_drain_is_left_to_it_until_its_claim_expires(
    client, tenant, fake_backlog, approvals, enqueued
):
    post_all(client, tenant, fake_backlog)
    held = BacklogEvent.objects.order_by("pk").first()
    BacklogEvent.objects.filter(pk=held.pk).update(claimed_until=timezone.now() + timedelta(minutes=1))

    assert event_process(event_id=held.pk) == CLAIMED_ELSEWHERE
    assert events_drain() == 5
    assert BacklogEvent.objects.get(pk=held.pk).outcome == "pending"

    with time_machine.travel(timezone.now() + timedelta(minutes=2)):  # its worker died
        assert events_drain() == 1
    assert BacklogEvent.objects.get(pk=held.pk).outcome == "done"


def test_an_event_whose_drain_died_is_taken_again_within_seconds(
    client, tenant, fake_backlog, approvals, enqueued
):
    post_all(client, tenant, fake_backlog)
    held = BacklogEvent.objects.order_by("pk").first()
    now = timezone.now()
    assert claim_one(BacklogEvent, pk=held.pk, now=now, lease=EVENT_CLAIM)  # … and its drain is killed

    assert events_drain() == 5
    with time_machine.travel(now + timedelta(seconds=6)):  # one short lease later
        assert events_drain() == 1
    assert BacklogEvent.objects.get(pk=held.pk).outcome == "done"


def test_an_unexpected_error_fails_that_event_and_the_drain_goes_on(
    client, tenant, fake_backlog, approvals, enqueued, monkeypatch
):
    post_all(client, tenant, fake_backlog)
    first = BacklogEvent.objects.order_by("pk").first()
    real_route = events._route

    def route(event, client):
        if event.pk == first.pk:
            raise RuntimeError("bug")
        return real_route(event, client)

    monkeypatch.setattr(events, "_route", route)

    assert events_drain() == 6
    failed = BacklogEvent.objects.get(pk=first.pk)
    assert (failed.outcome, failed.detail, failed.attempts) == ("failed", "RuntimeError: bug", 1)
    assert BacklogEvent.objects.filter(outcome="done").count() == 5


def test_a_drain_over_its_budget_hands_the_rest_to_a_new_drain(
    client, tenant, fake_backlog, approvals, enqueued, monkeypatch
):
    post_all(client, tenant, fake_backlog)
    enqueued.clear()
    monkeypatch.setattr(BACKLOG_EVENTS, "batch", 2)

    assert events_drain(budget=-1.0) == 2  # one round, then over budget

    assert enqueued == [("backlog_bridge.tasks.process_events",)]
    assert BacklogEvent.objects.filter(outcome="pending").count() == 4


def test_run_scheduler_drains_an_event_that_no_drain_took(
    client, tenant, fake_backlog, approvals, enqueued, monkeypatch
):
    monkeypatch.setattr(BACKLOG_EVENTS, "stranded_checked_at", float("-inf"))
    post_all(client, tenant, fake_backlog)
    enqueued.clear()  # the broker lost those drains

    # younger than 2 s: a drain may be on its way
    assert BACKLOG_EVENTS.stranded_drain(now=timezone.now()) is False
    monkeypatch.setattr(BACKLOG_EVENTS, "stranded_checked_at", float("-inf"))
    later = timezone.now() + timedelta(seconds=3)
    assert BACKLOG_EVENTS.stranded_drain(now=later) is True
    assert enqueued == [("backlog_bridge.tasks.process_events",)]
    assert BACKLOG_EVENTS.stranded_drain(now=later) is False  # looks again only after 2 s


def test_the_view_writes_no_task_row_per_event_with_the_orm_broker(
    client, tenant, fake_backlog, approvals, settings, monkeypatch
):
    from django_q.conf import Conf
    from django_q.models import OrmQ

    monkeypatch.setattr(Conf, "SYNC", False)  # a real enqueue into the ORM broker
    settings.BACKLOG_EVENT_BATCH_SECONDS = 60.0
    monkeypatch.setattr(BACKLOG_EVENTS, "drain_requested_at", float("-inf"))

    post_all(client, tenant, fake_backlog)

    assert BacklogEvent.objects.count() == 6
    assert [row.func() for row in OrmQ.objects.all()] == ["backlog_bridge.tasks.process_events"]


@pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx
@pytest.mark.parametrize(
    ("type_", "content", "issue_key"),
    [
        (
            3,
            {"key_id": "1/../OTHER-1", "id": 1, "comment": {"id": 5, "content": "/automedia cancel"}},
            "ACME-1/../OTHER-1",
        ),
        (3, {"key_id": 1, "id": 1, "comment": {"id": "5/../../../users/myself", "content": "x"}}, "ACME-1"),
        (
            2,
            {"key_id": 1, "id": 1, "changes": []},
            "ACME-1/../OTHER-1",
        ),  # a stored key the payload does not give
        (14, {"link": [{"id": 1, "key_id": "2/../../OTHER-2"}]}, ""),
    ],
)
def test_a_stored_event_with_an_identifier_out_of_format_is_rejected_without_a_request(
    tenant, fake_backlog, type_, content, issue_key
):
    # Stored before the receiver checked identifiers (or by a catch-up): checked again here.
    event = BacklogEvent.objects.create(
        tenant=tenant,
        activity_id=77,
        type=type_,
        issue_key=issue_key,
        payload={"id": 77, "type": type_, "project": {"projectKey": "ACME"}, "content": content},
    )

    with respx.mock(assert_all_called=False) as backlog:
        anything = backlog.route().respond(200, json={})
        assert events_drain() == 1

    event.refresh_from_db()
    assert event.outcome == "rejected" and event.detail.startswith("invalid payload: ")
    assert not anything.called and not fake_backlog.requests


def test_it_ignores_an_event_whose_type_no_app_handles(
    client, tenant, fake_backlog, approvals, enqueued, monkeypatch
):
    """The drain knows no lifecycle: without a registered handler the event ends ignored."""
    post_all(client, tenant, fake_backlog)
    monkeypatch.setattr(events, "EVENT_HANDLERS", {})
    events_drain()
    event = BacklogEvent.objects.filter(issue_key=approvals[0]).last()
    assert event.outcome == BacklogEvent.Outcome.IGNORED
    assert event.detail.startswith("no handler for activity type")
    assert not DeliverySchedule.objects.exists()

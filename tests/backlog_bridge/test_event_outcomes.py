"""Every stored Backlog event ends: done, ignored, or rejected with its reason (a payload a
handler cannot read, or still failing on its last attempt); none stays pending or failed."""

from __future__ import annotations

from datetime import timedelta

import pytest
import respx
import time_machine
from django.utils import timezone

from backlog_bridge import events
from backlog_bridge.events import event_process, events_drain
from backlog_bridge.models import BacklogEvent
from backlog_bridge.services import pending_events_retry
from core.intake import MAX_EVENT_ATTEMPTS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]  # respx sees only httpx

UPDATED = {"key_id": 1, "id": 1, "changes": [{"field": "status", "new_value": "5"}]}


def stored(tenant, payload: object, *, type_: int = 2, issue_key: str = "ACME-1", **fields) -> BacklogEvent:
    """An event as an older receiver (or the catch-up) stored it: unchecked."""
    return BacklogEvent.objects.create(
        tenant=tenant, activity_id=77, type=type_, issue_key=issue_key, payload=payload, **fields
    )


def activity(**fields) -> dict:
    return {"id": 77, "type": 2, "project": {"projectKey": "ACME"}, "content": UPDATED, **fields}


UNUSABLE = {
    # each once reached a handler: AttributeError, TypeError ("'int' object is not iterable")
    "changes-of-text": activity(content=UPDATED | {"changes": ["status"]}),
    "changes-a-number": activity(content=UPDATED | {"changes": 5}),
    "created-user-text": activity(createdUser="manager"),
    "content-text": activity(content="ACME-1"),
    "payload-a-list": [1, 2],
}


@pytest.mark.parametrize("case", list(UNUSABLE))
def test_a_stored_event_a_handler_cannot_read_ends_rejected_with_its_reason_and_no_request(
    tenant, fake_backlog, case
):
    event = stored(tenant, UNUSABLE[case])

    with respx.mock(assert_all_called=False) as backlog:
        anything = backlog.route().respond(200, json={})
        assert events_drain() == 1

    event.refresh_from_db()
    assert event.outcome == "rejected" and event.detail.startswith("invalid payload: ")
    assert (event.attempts, event.claimed_until) == (1, None)
    assert not anything.called and not fake_backlog.requests


def test_an_unexpected_error_on_the_last_attempt_ends_rejected_with_the_reason(tenant, monkeypatch):
    event = stored(tenant, activity(), attempts=MAX_EVENT_ATTEMPTS - 1, outcome="failed")

    def route(event, client):
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(events, "_route", route)

    assert event_process(event_id=event.pk) == "rejected"
    event.refresh_from_db()
    assert (event.outcome, event.attempts) == ("rejected", MAX_EVENT_ATTEMPTS)
    assert (
        event.detail
        == f"gave up after {MAX_EVENT_ATTEMPTS} attempts: TypeError: 'int' object is not iterable"
    )


def test_an_unexpected_error_before_the_last_attempt_fails_for_a_retry(tenant, monkeypatch):
    event = stored(tenant, activity())
    monkeypatch.setattr(events, "_route", lambda event, client: {}["missing"])

    assert event_process(event_id=event.pk) == "failed"
    event.refresh_from_db()
    assert (event.outcome, event.attempts, event.detail) == ("failed", 1, "KeyError: 'missing'")


@pytest.mark.parametrize("outcome", ["pending", "failed"])
def test_the_retry_job_ends_an_event_whose_attempts_ran_out_with_no_outcome(tenant, outcome):
    # A worker that died on the last attempt left it: no drain or retry would take it again.
    event = stored(tenant, activity(), attempts=MAX_EVENT_ATTEMPTS, outcome=outcome)

    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert pending_events_retry() == 0

    event.refresh_from_db()
    assert event.outcome == "rejected"
    assert event.detail == f"gave up after {MAX_EVENT_ATTEMPTS} attempts with no outcome"


def test_the_retry_job_leaves_an_exhausted_event_a_live_worker_holds(tenant):
    held = timezone.now() + timedelta(minutes=10)
    event = stored(tenant, activity(), attempts=MAX_EVENT_ATTEMPTS, claimed_until=held)

    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        pending_events_retry()

    event.refresh_from_db()
    assert event.outcome == "pending"

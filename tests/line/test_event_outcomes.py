"""Every stored LINE event ends: done, ignored, or rejected with its reason. An event a handler
cannot read is rejected at once; one whose handler keeps raising is rejected on its last
attempt; one a dead worker left with no attempt to spare is ended by the retry job."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import respx
import time_machine
from django.utils import timezone

from core.intake import MAX_EVENT_ATTEMPTS
from line import events
from line.events import line_event_process, line_events_drain, line_events_retry
from line.models import LineWebhookEvent
from tests.helpers.linepush import shop

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]  # respx sees only httpx


def stored(payload: object, *, type_: str = "message", **fields) -> LineWebhookEvent:
    """An event as an older receiver stored it: unchecked."""
    return LineWebhookEvent.objects.create(
        tenant=shop(), webhook_event_id="e1", type=type_, payload=payload, **fields
    )


UNUSABLE = {
    # each once raised in a handler: AttributeError "'str' object has no attribute 'get'",
    # httpx.InvalidURL from an id in a path, DataError for a user id over 64 characters
    "message-text": ("message", {"message": "hi", "source": {"type": "user", "userId": "U" + "a" * 32}}),
    "source-text": ("follow", {"source": "user"}),
    "user-id-a-path": ("follow", {"source": {"type": "user", "userId": "U1/../../bot/info"}}),
    "user-id-too-long": ("unfollow", {"source": {"type": "user", "userId": "U" + "a" * 80}}),
    "group-id-with-a-newline": ("join", {"source": {"type": "group", "groupId": "C1\n"}}),
    "members-a-number": (
        "memberJoined",
        {"joined": 3, "source": {"type": "group", "groupId": "C" + "a" * 32}},
    ),
    "payload-a-list": ("follow", [1]),
}


@pytest.mark.parametrize("case", list(UNUSABLE))
def test_an_event_a_handler_cannot_read_ends_rejected_at_once_with_no_request(case):
    type_, payload = UNUSABLE[case]
    event = stored(payload, type_=type_)

    with respx.mock(assert_all_called=False) as line:
        anything = line.route().respond(200, json={})
        assert line_events_drain() == 1

    event.refresh_from_db()
    assert event.outcome == "rejected" and event.detail.startswith("invalid payload: ")
    assert not anything.called


def test_a_handler_that_keeps_raising_ends_rejected_on_its_last_attempt():
    event = stored({"source": {"type": "user", "userId": "U" + "a" * 32}}, type_="follow")
    broken = mock.Mock(side_effect=AttributeError("'str' object has no attribute 'get'"))

    with (
        mock.patch.dict(events.HANDLERS, {"follow": broken}),
        time_machine.travel(timezone.now(), tick=False) as clock,
    ):
        for _ in range(MAX_EVENT_ATTEMPTS - 1):
            assert line_event_process(event_id=event.pk) == "failed"
            clock.shift(timedelta(minutes=16))  # past the ladder's longest step
        assert line_event_process(event_id=event.pk) == "rejected"

    event.refresh_from_db()
    assert (event.outcome, event.attempts, event.claimed_until) == ("rejected", MAX_EVENT_ATTEMPTS, None)
    assert event.detail == (
        f"gave up after {MAX_EVENT_ATTEMPTS} attempts: AttributeError: 'str' object has no attribute 'get'"
    )


def test_the_retry_job_ends_an_event_left_pending_with_no_attempt_to_spare():
    # What line_events_retry once left forever: pending, its attempts used up.
    event = stored({}, type_="follow", attempts=MAX_EVENT_ATTEMPTS)

    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert line_events_retry() == 0

    event.refresh_from_db()
    assert (event.outcome, event.detail) == (
        "rejected",
        f"gave up after {MAX_EVENT_ATTEMPTS} attempts with no outcome",
    )


def test_the_retry_job_goes_on_past_an_event_whose_handler_raises():
    first = stored({}, type_="follow")
    second = LineWebhookEvent.objects.create(
        tenant=first.tenant, webhook_event_id="e2", type="follow", payload={}
    )
    handler = mock.Mock(side_effect=[RuntimeError("LINE down"), "ok"])

    with (
        mock.patch.dict(events.HANDLERS, {"follow": handler}),
        time_machine.travel(timezone.now() + timedelta(minutes=5)),
    ):
        assert line_events_retry() == 2

    assert LineWebhookEvent.objects.get(pk=first.pk).outcome == "failed"
    assert LineWebhookEvent.objects.get(pk=second.pk).outcome == "done"

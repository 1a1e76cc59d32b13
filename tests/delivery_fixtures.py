"""Delivery fixtures shared by the delivery, command and effect tests (a pytest plugin):
a fake LINE, a template, LINE contacts, an approved issue, and firing its schedule."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from core.timeutil import JST
from deliveries.delivery import delivery_run
from deliveries.models import DeliverySchedule, MessageTemplate
from deliveries.scheduler import schedules_claim
from sandbox.line import FakeLine
from tests.deliveries.test_lifecycle import body
from tests.factories import LineContactFactory

DUE = datetime(2026, 12, 10, 10, 0, tzinfo=JST)
MULTICAST = "/v2/bot/message/multicast"


@pytest.fixture
def line(settings):
    with FakeLine(channel_tokens={"line-channel-token"}) as fake:
        settings.LINE_API_BASE_URL = fake.base_url
        yield fake


@pytest.fixture
def template(db):
    return MessageTemplate.objects.create(
        name="announce_open",
        rev="r1",
        messages=[{"type": "text", "text": "{{ date }} の営業時間は {{ hours }} です"}],
    )


@pytest.fixture
def contacts(tenant):
    return [LineContactFactory(tenant=tenant, tags=["active"]) for _ in range(3)] + [
        LineContactFactory(tenant=tenant, tags=["active", "opt_out"]),
        LineContactFactory(tenant=tenant, tags=["active"], blocked=True),
    ]


@pytest.fixture
def approved(fake_backlog, tenant, pump, template, contacts, line):
    """An approved issue due at DUE, with its schedule registered."""

    def make(description: str = body()) -> str:
        return approve_issue(fake_backlog, pump, tenant, summary="年末告知", description=description)

    return make


def approve_issue(fake_backlog, pump, tenant, *, summary: str, description: str) -> str:
    """Create an issue, approve it on 2026-12-01 09:00 JST and let automedia register it;
    the fake's request log starts empty afterwards."""
    with time_machine.travel(datetime(2026, 12, 1, 9, 0, tzinfo=JST), tick=False):
        key = fake_backlog.create_issue("ACME", summary=summary, description=description, status="処理中")[
            "issueKey"
        ]
        fake_backlog.update_issue(key, status="automedia承認")
        pump(tenant)
    assert DeliverySchedule.objects.filter(task__issue_key=key).exists()
    fake_backlog.reset_requests()
    return key


def fire(key: str, *, late: float = 0.01) -> str:
    """Let the scheduler claim the schedule at its due time and run the task."""
    schedule = DeliverySchedule.objects.get(task__issue_key=key)
    with time_machine.travel(schedule.due_at + timedelta(seconds=late), tick=True):
        [(schedule_id, token)] = schedules_claim(now=timezone.now())
        return delivery_run(schedule_id=schedule_id, token=token)

"""Delivery helpers shared by the delivery, command, effect and admin tests: the due time,
LINE's multicast path, approving an issue and firing its schedule.

Their fixtures (a fake LINE, a template, LINE contacts, `approved`) are in tests/conftest.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import time_machine
from django.utils import timezone

from core.timeutil import JST
from deliveries.models import DeliverySchedule
from deliveries.publish.delivery import FAILED_QUEUED, WRITEBACK_QUEUED, delivery_run
from deliveries.publish.scheduler import schedules_claim
from deliveries.tasks import deliver, writeback_batch
from deliveries.writeback.queue import writebacks_claim
from tests.helpers.factories import ContentTaskFactory, TenantFactory

DUE = datetime(2026, 12, 10, 10, 0, tzinfo=JST)
MULTICAST = "/v2/bot/message/multicast"


def issue_approve(fake_backlog, pump, tenant, *, summary: str, description: str) -> str:
    """Create an issue, approve it on 2026-12-01 09:00 JST and let automedia take the approval
    (registered, or refused by its checks); its key."""
    with time_machine.travel(datetime(2026, 12, 1, 9, 0, tzinfo=JST), tick=False):
        key = fake_backlog.create_issue("ACME", summary=summary, description=description, status="処理中")[
            "issueKey"
        ]
        fake_backlog.update_issue(key, status="automedia承認")
        pump(tenant)
    return key


def approve_issue(fake_backlog, pump, tenant, *, summary: str, description: str) -> str:
    """`issue_approve`, and the schedule registered; the fake's request log starts empty afterwards."""
    key = issue_approve(fake_backlog, pump, tenant, summary=summary, description=description)
    assert scheduled(key)
    fake_backlog.reset_requests()
    return key


def scheduled(key: str) -> bool:
    return DeliverySchedule.objects.filter(task__issue_key=key).exists()


def fire(key: str, *, late: float = 0.01) -> str:
    """Let the scheduler claim the schedule at its due time and run the task; a send that
    ended is then written back by the write-backs' queue, whose result is returned."""
    schedule = DeliverySchedule.objects.get(task__issue_key=key)
    with time_machine.travel(schedule.due_at + timedelta(seconds=late), tick=True):
        if schedule.stage == DeliverySchedule.Stage.WRITEBACK:  # the write-backs' queue's
            return write_backs().get(schedule.pk, "not claimed")
        [(schedule_id, token)] = schedules_claim(now=timezone.now())
        return written_back(schedule_id, delivery_run(schedule_id=schedule_id, token=token))


def run_task(key: str) -> str:
    """The scheduler's claim, then the django-q2 task itself (deliveries.tasks.deliver), then
    the write-back's task."""
    schedule = DeliverySchedule.objects.get(task__issue_key=key)
    with time_machine.travel(schedule.due_at + timedelta(seconds=0.01), tick=True):
        [(schedule_id, token)] = schedules_claim(now=timezone.now())
        return written_back(schedule_id, deliver(schedule_id, token))


def written_back(schedule_id: int, result: str) -> str:
    """After a send or failure that queued its write-back: the write-back's result (the
    write-backs' queue claims what is due and runs it as `writeback_batch` would)."""
    if result not in (WRITEBACK_QUEUED, FAILED_QUEUED):
        return result
    return write_backs().get(schedule_id, result)


def write_backs() -> dict[int, str]:
    """Every due write-back, run now: {schedule id: result}."""
    results = {}
    for rows in writebacks_claim(now=timezone.now(), limit=200):
        results |= dict(zip([pk for pk, _ in rows], writeback_batch(rows), strict=True))
    return results


def make_schedule(tenant=None, *, due_in: float = -1.0, **fields) -> DeliverySchedule:
    task = ContentTaskFactory(tenant=tenant or TenantFactory(slug="acme"))
    return DeliverySchedule.objects.create(
        tenant=task.tenant,
        task=task,
        name=DeliverySchedule.name_for(task.tenant, task.issue_key),
        due_at=timezone.now() + timedelta(seconds=due_in),
        reason="approval",
        **fields,
    )

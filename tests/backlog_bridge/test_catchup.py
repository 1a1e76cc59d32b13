"""Missed webhooks are recovered from project activities; accepted events are never lost."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from backlog_bridge.client import BacklogClient
from backlog_bridge.models import BacklogEvent
from backlog_bridge.schedules import RECURRING
from backlog_bridge.services import catchup_run, pending_events_retry, webhook_accept
from backlog_bridge.tasks import catchup_all
from core.models import Tenant
from deliveries.models import DeliverySchedule
from tests.helpers.backlog import body


def client_for(tenant) -> BacklogClient:
    return BacklogClient.for_tenant(tenant)


def test_it_starts_its_cursor_at_the_latest_activity_on_first_run(fake_backlog, tenant):
    fake_backlog.create_issue("ACME", summary="昔の課題", description=body(), status="automedia承認")

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 0

    tenant.refresh_from_db()
    assert tenant.last_activity_id == fake_backlog.activities("ACME")[-1]["id"]
    assert not BacklogEvent.objects.exists()


def test_it_processes_activities_whose_webhooks_never_arrived(fake_backlog, tenant):
    catchup_run(tenant=tenant, client=client_for(tenant))
    key = fake_backlog.create_issue("ACME", summary="取りこぼし", description=body())["issueKey"]
    fake_backlog.update_issue(key, status="automedia承認")
    tenant.refresh_from_db()

    missed = [a["id"] for a in fake_backlog.activities("ACME") if a["id"] > tenant.last_activity_id]

    # 2 missed + automedia's own "予約しました" comment, read back within the same run
    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 3

    assert DeliverySchedule.objects.filter(task__issue_key=key).exists()
    assert set(missed) <= set(BacklogEvent.objects.values_list("activity_id", flat=True))
    assert set(BacklogEvent.objects.values_list("source", flat=True)) == {"catchup"}


def test_it_skips_activities_already_received_by_webhook(
    fake_backlog, tenant, django_capture_on_commit_callbacks
):
    catchup_run(tenant=tenant, client=client_for(tenant))
    fake_backlog.create_issue("ACME", summary="届いた", description=body())
    with django_capture_on_commit_callbacks(execute=True):
        webhook_accept(tenant=tenant, payload=fake_backlog.outbox.pop())
    tenant.refresh_from_db()

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 0
    assert BacklogEvent.objects.get().source == "webhook"


def test_it_pages_through_more_than_one_page_of_activities(fake_backlog, tenant):
    catchup_run(tenant=tenant, client=client_for(tenant))
    for i in range(120):
        fake_backlog.create_issue("ACME", summary=f"大量{i}", description="")
    tenant.refresh_from_db()

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 120
    tenant.refresh_from_db()
    assert tenant.last_activity_id == fake_backlog.activities("ACME")[-1]["id"]


def test_it_reruns_an_accepted_event_the_broker_lost(
    fake_backlog, tenant, django_capture_on_commit_callbacks
):
    key = fake_backlog.create_issue("ACME", summary="迷子", description=body(), status="automedia承認")[
        "issueKey"
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django_q.tasks.async_task", lambda *a, **kw: None)  # the broker loses it
        assert webhook_accept(tenant=tenant, payload=fake_backlog.outbox.pop()) == "accepted"
    assert BacklogEvent.objects.get().outcome == "pending"

    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        assert pending_events_retry() == 1

    assert BacklogEvent.objects.get().outcome == "done"
    assert DeliverySchedule.objects.filter(task__issue_key=key).exists()


def test_it_keeps_a_failed_event_for_a_later_retry_while_backlog_is_down(
    fake_backlog, tenant, django_capture_on_commit_callbacks
):
    key = fake_backlog.create_issue("ACME", summary="障害", description=body(), status="automedia承認")[
        "issueKey"
    ]
    fake_backlog.fail_next(503, path_prefix=f"/api/v2/issues/{key}")
    with django_capture_on_commit_callbacks(execute=True):
        webhook_accept(tenant=tenant, payload=fake_backlog.outbox.pop())
    event = BacklogEvent.objects.get()
    assert (event.outcome, event.attempts) == ("failed", 1)

    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        pending_events_retry()

    assert BacklogEvent.objects.get().outcome == "done"
    assert DeliverySchedule.objects.filter(task__issue_key=key).exists()


def test_it_runs_catchup_for_every_active_tenant(fake_backlog, tenant):
    Tenant.objects.create(
        slug="paused",
        name="停止中",
        backlog_base_url="http://127.0.0.1:9",
        backlog_api_key="k",
        backlog_project_key="X",
        is_active=False,
    )

    result = catchup_all()

    assert result == {"acme": 0, "_retried": 0}


def test_it_registers_the_catchup_job_every_five_minutes(db):
    from django_q.models import Schedule

    job = Schedule.objects.get(name="automedia-backlog-catchup")
    assert (job.func, job.schedule_type, job.minutes) == (
        RECURRING["automedia-backlog-catchup"]["func"],
        Schedule.MINUTES,
        5,
    )

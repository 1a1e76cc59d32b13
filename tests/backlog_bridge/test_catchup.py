"""Missed webhooks are recovered from project activities; accepted events are never lost."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from backlog_bridge.client import MAX_PAGE, BacklogClient, BacklogError
from backlog_bridge.models import BacklogEvent
from backlog_bridge.schedules import RECURRING
from backlog_bridge.services import catchup_run, pending_events_retry, webhook_accept
from backlog_bridge.tasks import catchup_all
from console.attention import MISSED, attention_list
from core.models import Tenant
from core.timeutil import JST
from deliveries.models import ContentTask, DeliverySchedule
from tests.helpers.backlog import body

DEC_10 = datetime(2026, 12, 10, 10, 0, tzinfo=JST)  # body()'s 投稿日時
AFTER_DEC_10 = DEC_10 + timedelta(hours=1)


def client_for(tenant) -> BacklogClient:
    return BacklogClient.for_tenant(tenant)


def missed_keys(user, when: datetime) -> list[str]:
    """The issue keys the admin's 要対応 lists as 期限切れ（未承認） at `when`."""
    return [row.title for row in attention_list(user=user, now=when).rows if row.kind == MISSED]


def test_its_first_run_registers_the_issues_the_project_has_already(fake_backlog, tenant, admin_user):
    waiting = fake_backlog.create_issue("ACME", summary="昔の課題", description=body(), status="処理中")
    approved = fake_backlog.create_issue(
        "ACME", summary="承認済み", description=body(when="2026-12-20 10:00"), status="automedia承認"
    )
    fake_backlog.outbox.clear()  # automedia was not listening
    latest = fake_backlog.activities("ACME")[-1]["id"]

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 2

    tenant.refresh_from_db()
    assert tenant.last_activity_id == latest  # read before the listing: later ones come next run
    assert missed_keys(admin_user, AFTER_DEC_10) == [waiting["issueKey"]]
    assert DeliverySchedule.objects.filter(task__issue_key=approved["issueKey"]).exists()
    assert not BacklogEvent.objects.exists()


def test_its_first_run_lists_every_page_of_issues(fake_backlog, tenant):
    for i in range(MAX_PAGE + 5):
        fake_backlog.create_issue("ACME", summary=f"既存{i}", description="")

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == MAX_PAGE + 5

    assert ContentTask.objects.filter(tenant=tenant).count() == MAX_PAGE + 5


def test_a_first_run_that_fails_midway_keeps_no_cursor_and_starts_over(fake_backlog, tenant):
    key = fake_backlog.create_issue("ACME", summary="既存", description=body())["issueKey"]
    fake_backlog.fail_next(503, method="GET", path_prefix="/api/v2/issues")

    with pytest.raises(BacklogError):
        catchup_run(tenant=tenant, client=client_for(tenant))
    tenant.refresh_from_db()
    assert tenant.last_activity_id is None

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 1
    assert ContentTask.objects.filter(tenant=tenant, issue_key=key).exists()


def test_an_issue_created_and_changed_while_webhooks_were_lost_shows_as_missed(
    fake_backlog, tenant, admin_user
):
    catchup_run(tenant=tenant, client=client_for(tenant))
    key = fake_backlog.create_issue("ACME", summary="下書き", description=body(when="2026-12-09 10:00"))[
        "issueKey"
    ]
    fake_backlog.update_issue(key, description=body(), summary="告知")  # 投稿日時 moved to 12-10
    fake_backlog.outbox.clear()  # automedia was down: both webhooks lost
    tenant.refresh_from_db()

    assert catchup_run(tenant=tenant, client=client_for(tenant)) == 2

    task = ContentTask.objects.get(tenant=tenant, issue_key=key)
    assert (task.summary, task.channel, task.publish_at) == ("告知", "line", DEC_10)
    assert missed_keys(admin_user, AFTER_DEC_10) == [key]
    assert not DeliverySchedule.objects.exists()


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


def test_a_first_run_waits_for_backlogs_rate_limit_and_later_runs_do_not(fake_backlog, tenant, monkeypatch):
    paced, made = [], BacklogClient.for_tenant

    def for_tenant(cls, tenant, **kwargs):
        paced.append(kwargs.get("paced", False))
        return made(tenant, **kwargs)

    monkeypatch.setattr(BacklogClient, "for_tenant", classmethod(for_tenant))

    catchup_all()
    catchup_all()

    assert paced == [True, False]

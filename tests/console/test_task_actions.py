"""Approve, cancel and retry a content task from the admin: through Backlog's API and the existing services."""

from __future__ import annotations

from datetime import datetime

import pytest
import time_machine
from django.contrib.admin.models import LogEntry

from core.timeutil import JST
from deliveries.models import STATUS_APPROVED, STATUS_ERROR, ContentTask, DeliverySchedule
from tests.helpers.backlog import body, status_of, texts
from tests.helpers.console import messages_of, mirrored_issue, task_url

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def task(fake_backlog, pump, tenant, template, contacts):
    return mirrored_issue(fake_backlog, pump, tenant)


def test_it_approves_through_backlog_and_schedules_at_once(as_manager, fake_backlog, task, pump, tenant):
    response = as_manager.post(task_url("approve", task), follow=True)

    schedule = DeliverySchedule.objects.get(task=task)
    assert schedule.due_at == datetime(2026, 12, 10, 10, 0, tzinfo=JST)
    assert status_of(fake_backlog, task.issue_key) == STATUS_APPROVED
    assert "管理画面で yamada さんが承認しました。" in texts(fake_backlog, task.issue_key)[0]
    assert any(
        "配信を予約しました: 2026-12-10 10:00:00 (JST)" in t for t in texts(fake_backlog, task.issue_key)
    )
    assert "2026-12-10 10:00:00 (JST) に配信を予約しました" in " ".join(messages_of(response))
    pump(tenant)  # the webhook of our own change finds nothing to do
    assert DeliverySchedule.objects.get(task=task).pk == schedule.pk


def test_it_records_who_approved_on_the_task_page(as_manager, task, manager):
    as_manager.post(task_url("approve", task))

    entry = LogEntry.objects.get(object_id=str(task.pk))
    assert (entry.user, entry.change_message) == (manager, "承認: 2026-12-10 10:00:00 (JST) に配信予約")
    page = as_manager.get(task_url("change", task)).content.decode()
    assert "yamada" in page and "承認: 2026-12-10 10:00:00 (JST) に配信予約" in page


def test_it_says_why_a_task_with_parse_problems_was_not_scheduled(
    as_manager, fake_backlog, pump, tenant, template, contacts
):
    task = mirrored_issue(fake_backlog, pump, tenant, description=body(when="いつか"))

    response = as_manager.post(task_url("approve", task), follow=True)

    assert not DeliverySchedule.objects.filter(task=task).exists()
    assert status_of(fake_backlog, task.issue_key) == STATUS_ERROR
    assert "予約されませんでした（Backlog の状態: automediaエラー）" in " ".join(messages_of(response))


def test_it_refuses_a_second_approval_of_a_scheduled_task(as_manager, fake_backlog, task):
    as_manager.post(task_url("approve", task))
    fake_backlog.reset_requests()

    response = as_manager.post(task_url("approve", task), follow=True)

    assert "すでに配信が予約されています。" in messages_of(response)
    assert not [r for r in fake_backlog.requests if r.method == "PATCH"]


def test_it_cancels_and_moves_the_status_back(as_manager, fake_backlog, task, manager):
    as_manager.post(task_url("approve", task))

    response = as_manager.post(task_url("cancel", task), follow=True)

    assert not DeliverySchedule.objects.filter(task=task).exists()
    assert status_of(fake_backlog, task.issue_key) == "処理中"
    assert "を取り消し、状態を「処理中」に戻しました。" in messages_of(response)[-1]
    assert "（管理画面: yamada さん）" in texts(fake_backlog, task.issue_key)[-1]
    assert LogEntry.objects.filter(user=manager, change_message__startswith="予約取消").exists()


def test_it_retries_a_task_in_error_by_approving_it_again(as_manager, fake_backlog, pump, tenant, task):
    fake_backlog.update_issue(task.issue_key, status=STATUS_ERROR)
    pump(tenant)

    response = as_manager.post(task_url("retry", task), follow=True)

    assert DeliverySchedule.objects.filter(task=task).exists()
    assert status_of(fake_backlog, task.issue_key) == STATUS_APPROVED
    assert "再実行（再承認）し" in messages_of(response)[-1]
    assert ContentTask.objects.get(pk=task.pk).approval_seq == 1


def test_it_retries_only_tasks_in_error(as_manager, task):
    response = as_manager.post(task_url("retry", task), follow=True)

    assert messages_of(response) == ["「automediaエラー」の課題だけ再実行できます。"]


def test_it_shows_a_backlog_failure_as_a_message_not_a_500(as_manager, fake_backlog, task):
    fake_backlog.fail_next(503, count=10)

    response = as_manager.post(task_url("approve", task), follow=True)

    assert response.status_code == 200
    assert "Backlog との通信に失敗しました" in messages_of(response)[-1]
    assert not DeliverySchedule.objects.filter(task=task).exists()


def test_it_accepts_actions_only_as_post(as_manager, task):
    assert as_manager.get(task_url("approve", task)).status_code == 405


@pytest.mark.parametrize(
    ("status", "buttons"),
    [("処理中", {"task-approve"}), (STATUS_ERROR, {"task-retry"})],
)
def test_it_offers_the_actions_that_fit_the_task(as_manager, fake_backlog, pump, tenant, status, buttons):
    task = mirrored_issue(fake_backlog, pump, tenant, status=status)

    page = as_manager.get(task_url("change", task)).content.decode()

    shown = {b for b in ("task-approve", "task-retry", "task-cancel") if f'id="{b}"' in page}
    assert shown == buttons and 'id="task-preview"' in page


def test_it_offers_cancel_once_scheduled(as_manager, task):
    as_manager.post(task_url("approve", task))

    page = as_manager.get(task_url("change", task)).content.decode()

    assert 'id="task-cancel"' in page and 'id="task-approve"' not in page
    assert "2026年12月10日 10:00" in page or "2026-12-10 10:00:00" in page  # the schedule panel, JST

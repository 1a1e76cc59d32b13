"""The lifecycle of an issue (docs/USAGE.md "What each Backlog change does"), driven through the webhook with the fake Backlog."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.test import override_settings

from core.models import Tenant
from core.timeutil import JST
from deliveries.models import ContentTask, DeliverySchedule
from tests.helpers.backlog import approve, body, status_of, texts

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def issue(fake_backlog, tenant, pump):
    """An issue in 処理中, its creation webhook already delivered."""
    created = fake_backlog.create_issue("ACME", summary="年末告知", description=body(), status="処理中")
    pump(tenant)
    return created["issueKey"]


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def writes(fake_backlog) -> list:
    return [r for r in fake_backlog.requests if r.method in ("PATCH", "POST")]


def last_comment(fake_backlog, key: str) -> str:
    return texts(fake_backlog, key)[-1]


def test_it_schedules_an_approved_issue_at_its_publish_time(fake_backlog, tenant, pump, issue):
    approve(fake_backlog, pump, tenant, issue)

    schedule = schedule_of(issue)
    assert schedule.name == f"automedia-deliver-acme-{issue}"
    assert schedule.due_at == datetime(2026, 12, 10, 10, 0, tzinfo=JST)
    assert "配信を予約しました: 2026-12-10 10:00:00 (JST)" in last_comment(fake_backlog, issue)
    task = ContentTask.objects.get(issue_key=issue)
    assert (task.status_name, task.channel, task.template_ref) == (
        "automedia承認",
        "line",
        "announce_open@r1",
    )
    assert task.approval_seq == 1


def test_it_schedules_a_past_publish_time_five_seconds_from_now(fake_backlog, tenant, pump):
    key = fake_backlog.create_issue("ACME", summary="即時", description=body(when="2026-11-01 10:00"))[
        "issueKey"
    ]
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key).due_at == NOW + timedelta(seconds=5)


def test_it_comments_every_parse_problem_and_schedules_nothing(fake_backlog, tenant, pump):
    text = "## 配信メタ\n- チャネル: FAX\n- 投稿日時: 2026-02-30 10:00\n"
    key = fake_backlog.create_issue("ACME", summary="壊れた課題", description=text)["issueKey"]
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key) is None
    comment = last_comment(fake_backlog, key)
    assert comment.startswith("[automedia] 課題の内容に問題があるため配信を予約できません。")
    assert "FAX" in comment and "2026-02-30" in comment and "テンプレ" in comment
    assert status_of(fake_backlog, key) == "automediaエラー"
    assert ContentTask.objects.get(issue_key=key).parse_errors


def test_it_does_not_start_another_round_after_its_own_status_change(fake_backlog, tenant, pump):
    key = fake_backlog.create_issue("ACME", summary="壊れた課題", description="本文なし")["issueKey"]
    fake_backlog.reset_requests()
    approve(fake_backlog, pump, tenant, key)  # pump also delivers automedia's own PATCH webhook

    assert len(writes(fake_backlog)) == 1
    assert len(texts(fake_backlog, key)) == 1


def test_it_uses_the_custom_field_publish_time_over_the_body(fake_backlog, tenant, pump):
    key = fake_backlog.create_issue(
        "ACME", summary="属性", description=body(), custom_fields={"投稿日時": "2026-12-20 18:30"}
    )["issueKey"]
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key).due_at == datetime(2026, 12, 20, 18, 30, tzinfo=JST)


def test_it_deletes_the_schedule_when_the_status_moves_away(fake_backlog, tenant, pump, issue):
    approve(fake_backlog, pump, tenant, issue)
    fake_backlog.update_issue(issue, status="処理中")
    pump(tenant)

    assert schedule_of(issue) is None
    assert "配信予約を取り消しました" in last_comment(fake_backlog, issue)


def test_it_deletes_the_schedule_when_the_issue_is_deleted(fake_backlog, tenant, pump, issue):
    approve(fake_backlog, pump, tenant, issue)
    fake_backlog.delete_issue(issue)
    pump(tenant)

    assert schedule_of(issue) is None
    assert ContentTask.objects.get(issue_key=issue).deleted_at is not None


def test_it_handles_every_issue_of_a_bulk_update(fake_backlog, tenant, pump):
    keys = [
        fake_backlog.create_issue("ACME", summary=f"一括{i}", description=body())["issueKey"]
        for i in range(3)
    ]
    pump(tenant)
    fake_backlog.bulk_update(keys, status="automedia承認")
    pump(tenant)

    assert DeliverySchedule.objects.filter(task__issue_key__in=keys).count() == 3


def test_it_invalidates_an_approval_whose_publish_time_a_bulk_date_update_moved(
    fake_backlog, tenant, pump, issue
):
    approve(fake_backlog, pump, tenant, issue)
    fake_backlog.bulk_update_dates([issue], custom_fields={"投稿日時": "2026-12-12 10:00"})
    pump(tenant)

    assert schedule_of(issue) is None
    assert status_of(fake_backlog, issue) == "処理中"
    assert "投稿日時が変更されました" in last_comment(fake_backlog, issue)


def test_it_reschedules_on_a_bulk_date_update_when_the_tenant_says_so(fake_backlog, tenant, pump, issue):
    Tenant.objects.filter(pk=tenant.pk).update(publish_time_policy="reschedule")
    approve(fake_backlog, pump, tenant, issue)
    fake_backlog.bulk_update_dates([issue], custom_fields={"投稿日時": "2026-12-11 12:00"})
    pump(tenant)

    assert schedule_of(issue).due_at == datetime(2026, 12, 11, 12, 0, tzinfo=JST)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"description": body(hours="9:00-17:00")}, "承認後に本文が変更されました"),
        ({"description": body(template="announce_open@r2")}, "テンプレ参照が変更されました"),
        ({"description": body(when="2026-12-11 10:00")}, "投稿日時が変更されました"),
        ({"custom_fields": {"投稿日時": "2026-12-12 10:00"}}, "投稿日時が変更されました"),
    ],
)
def test_it_invalidates_an_approval_when_the_content_changes(fake_backlog, tenant, pump, issue, edit, reason):
    approve(fake_backlog, pump, tenant, issue)
    fake_backlog.update_issue(issue, **edit)
    pump(tenant)

    assert schedule_of(issue) is None
    assert status_of(fake_backlog, issue) == "処理中"
    comment = last_comment(fake_backlog, issue)
    assert reason in comment and "承認を取り消し" in comment


def test_it_reschedules_a_changed_publish_time_when_the_tenant_says_so(fake_backlog, tenant, pump, issue):
    Tenant.objects.filter(pk=tenant.pk).update(publish_time_policy="reschedule")
    approve(fake_backlog, pump, tenant, issue)
    fake_backlog.update_issue(issue, description=body(when="2026-12-11 12:00"))
    pump(tenant)

    assert schedule_of(issue).due_at == datetime(2026, 12, 11, 12, 0, tzinfo=JST)
    assert status_of(fake_backlog, issue) == "automedia承認"
    assert ContentTask.objects.get(issue_key=issue).approval_seq == 1


def test_it_schedules_again_on_reapproval_after_an_error(fake_backlog, tenant, pump):
    key = fake_backlog.create_issue("ACME", summary="修正", description="壊れた本文")["issueKey"]
    approve(fake_backlog, pump, tenant, key)
    assert status_of(fake_backlog, key) == "automediaエラー"

    fake_backlog.update_issue(key, description=body())
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key).due_at == datetime(2026, 12, 10, 10, 0, tzinfo=JST)


def test_it_rejects_a_publish_time_in_quiet_hours(fake_backlog, tenant, pump):
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={
            "enabled": True,
            "timezone": "Asia/Tokyo",
            "ranges": [{"from": "22:00", "to": "08:00"}],
        }
    )
    key = fake_backlog.create_issue("ACME", summary="深夜", description=body(when="2026-12-10 23:30"))[
        "issueKey"
    ]
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key) is None
    assert "投稿日時を見直してください" in last_comment(fake_backlog, key)


def test_it_defers_a_publish_time_in_quiet_hours_to_their_end(fake_backlog, tenant, pump):
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={
            "enabled": True,
            "timezone": "Asia/Tokyo",
            "ranges": [{"from": "22:00", "to": "08:00"}],
            "mode": "defer",
        }
    )
    key = fake_backlog.create_issue("ACME", summary="深夜", description=body(when="2026-12-10 23:30"))[
        "issueKey"
    ]
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key).due_at == datetime(2026, 12, 11, 8, 0, tzinfo=JST)


def test_it_does_not_schedule_an_issue_already_delivered(fake_backlog, tenant, pump):
    key = fake_backlog.create_issue(
        "ACME",
        summary="済",
        description=body(),
        custom_fields={"自動配信実行日時": "2026-11-20T10:00:00+09:00"},
    )["issueKey"]
    approve(fake_backlog, pump, tenant, key)

    assert schedule_of(key) is None
    assert "配信済み" in last_comment(fake_backlog, key)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, "処理中"),
        ({"INVALIDATE_REVERT_STATUS_NAME": "未対応"}, "未対応"),
        ({"INVALIDATE_REVERT_STATUS_NAME": "審査中", "INVALIDATE_REVERT_STATUS_ID": 3}, "処理済み"),
        ({"INVALIDATE_REVERT_STATUS_ID": 4}, "完了"),
    ],
)
def test_it_reverts_to_the_status_the_seed_precedence_names(
    fake_backlog, tenant, pump, issue, overrides, expected
):
    approve(fake_backlog, pump, tenant, issue)
    with override_settings(**overrides):
        fake_backlog.update_issue(issue, description=body(hours="changed"))
        pump(tenant)

    assert status_of(fake_backlog, issue) == expected

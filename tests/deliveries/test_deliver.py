"""`deliver` against the fake Backlog and the fake LINE over real loopback HTTP."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from django.core import mail
from django.utils import timezone

from core.models import Tenant
from core.timeutil import JST, fmt_jst
from deliveries.channels.line.publisher import retry_key
from deliveries.claimed import schedules_take
from deliveries.locks import lock_take
from deliveries.models import ContentTask, DeliveryAttempt, DeliveryLock, DeliverySchedule, MessageTemplate
from deliveries.publish.delivery import Run
from deliveries.publish.scheduler import schedules_claim
from line.models import LinePlan, LinePushSettings
from tests.helpers.backlog import body, texts
from tests.helpers.deliveries import DUE, MULTICAST, fire, make_schedule
from tests.helpers.factories import LineContactFactory
from tests.helpers.holders import lose_holder
from tests.helpers.waiting import eventually


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def patches(fake_backlog) -> list:
    return [r for r in fake_backlog.requests if r.method == "PATCH"]


def test_it_sends_once_and_writes_back_in_one_patch(approved, fake_backlog, line):
    key = approved()

    assert fire(key) == "delivered"

    [sent] = line.sent(MULTICAST)
    assert len(sent.body["to"]) == 3
    assert sent.body["messages"] == [{"type": "text", "text": "2026-12-10 の営業時間は 7:00-18:00 です"}]
    assert sent.body["customAggregationUnits"] == ["ACME_1"]
    [patch] = patches(fake_backlog)
    assert patch.form["statusId"] == [str(fake_backlog.status_id("ACME", "automedia実行済み"))]
    issue = fake_backlog.issue(key)
    assert issue["status"]["name"] == "automedia実行済み"
    delivered = next(f["value"] for f in issue["customFields"] if f["name"] == "自動配信実行日時")
    assert delivered.startswith("2026-12-10T10:00:")
    delivered_jst = fmt_jst(datetime.fromisoformat(delivered))
    assert texts(fake_backlog, key)[-1].startswith(f"[automedia] 配信しました: {delivered_jst}")
    assert schedule_of(key) is None
    assert not DeliveryLock.objects.exists()


def test_it_sends_to_exactly_the_audience_of_the_tag_expression(approved, line, contacts):
    key = approved()
    fire(key)

    [sent] = line.sent(MULTICAST)
    assert sorted(sent.body["to"]) == sorted(c.user_id for c in contacts[:3])


def test_it_records_every_attempt_with_the_line_request_id(approved, line):
    key = approved()
    fire(key)

    [attempt] = DeliveryAttempt.objects.filter(task__issue_key=key)
    [sent] = line.sent(MULTICAST)
    assert (attempt.outcome, attempt.status_code, attempt.request_id) == ("sent", 200, sent.request_id)
    assert attempt.request_summary["recipients"] == 3


def test_it_derives_the_retry_key_from_tenant_issue_approval_and_chunk(approved, line, tenant):
    key = approved()
    fire(key)

    [sent] = line.sent(MULTICAST)
    expected = retry_key(tenant=tenant, issue_key=key, approval_seq=1, chunk=0)
    assert sent.headers["x-line-retry-key"] == expected
    assert uuid.UUID(expected).version == 5
    assert retry_key(tenant=tenant, issue_key=key, approval_seq=2, chunk=0) != expected


def test_it_multicasts_in_chunks_of_500(approved, line, tenant):
    for _ in range(1100):
        LineContactFactory(tenant=tenant, tags=["active"])
    light = LinePlan.objects.get(code="light")  # the free plan's 200 messages would refuse the approval
    LinePushSettings.objects.create(tenant=tenant, plan=light)
    key = approved()

    fire(key)

    assert [len(r.body["to"]) for r in line.sent(MULTICAST)] == [500, 500, 103]


def test_it_pushes_to_each_group_of_a_group_target(approved, line):
    key = approved(body().replace("tag:active, !tag:opt_out", "group:Cabc123 | group:Cdef456"))

    fire(key)

    assert sorted(r.body["to"] for r in line.sent("/v2/bot/message/push")) == ["Cabc123", "Cdef456"]


def test_it_does_not_send_a_task_that_already_has_its_delivery_time(approved, fake_backlog, line):
    key = approved()
    field = fake_backlog.custom_field_id("ACME", "自動配信実行日時")
    fake_backlog.update_issue(key, custom_fields={"自動配信実行日時": "2026-12-09T10:00:00+09:00"})
    assert field

    assert fire(key) == "already delivered"
    assert line.sent() == []
    assert schedule_of(key) is None


def test_a_second_taker_of_the_lock_does_nothing(approved, line, tenant):
    key = approved()
    schedule = schedule_of(key)
    now = timezone.now()
    DeliverySchedule.objects.filter(pk=schedule.pk).update(
        claimed_by="first", lease_until=now + timedelta(minutes=1)
    )
    assert lock_take(tenant=tenant, issue_key=key, owner="first", now=now)

    assert lock_take(tenant=tenant, issue_key=key, owner="second", now=now) is False
    assert (
        lock_take(tenant=tenant, issue_key=key, owner="second", now=now + timedelta(hours=1, seconds=1))
        is True
    )


def test_it_takes_over_a_lock_left_by_a_dead_claim(approved, line, tenant):
    key = approved()
    DeliveryLock.objects.create(
        tenant=tenant,
        issue_key=key,
        owner="dead-worker",
        taken_at=timezone.now(),
        expires_at=timezone.now() + timedelta(hours=1),
    )

    assert fire(key) == "delivered"
    assert len(line.sent()) == 1


def test_it_does_not_send_when_the_issue_is_no_longer_approved(approved, fake_backlog, line):
    key = approved()
    fake_backlog.update_issue(key, status="処理中")  # webhook lost

    assert fire(key) == "no longer approved"
    assert line.sent() == [] and schedule_of(key) is None


def test_it_invalidates_instead_of_sending_changed_content(approved, fake_backlog, line):
    key = approved()
    fake_backlog.update_issue(key, description=body(hours="10:00-12:00"))  # webhook lost

    assert fire(key) == "changed since approval"
    assert line.sent() == []
    assert fake_backlog.issue(key)["status"]["name"] == "処理中"
    assert schedule_of(key) is None


def test_it_fails_a_firing_inside_quiet_hours_in_reject_mode(approved, fake_backlog, line, tenant):
    key = approved()
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={"enabled": True, "ranges": [{"from": "09:00", "to": "11:00"}]}
    )

    assert fire(key) == "failed"
    assert line.sent() == []
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert texts(fake_backlog, key)[-1].startswith(
        "[automedia] 配信できませんでした: 配信時刻が静粛時間帯です"
    )


def test_it_defers_a_firing_inside_quiet_hours_in_defer_mode(approved, line, tenant):
    key = approved()
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={"enabled": True, "ranges": [{"from": "09:00", "to": "11:00"}], "mode": "defer"}
    )

    assert fire(key).startswith("deferred")
    assert schedule_of(key).due_at == datetime(2026, 12, 10, 11, 0, tzinfo=JST)
    assert line.sent() == []


def test_it_fails_with_the_name_of_a_missing_variable(approved, fake_backlog, line, template):
    key = approved(body(template="announce_open"))
    # A newer revision after the approval (whose checks rendered r1): the delivery renders it again.
    MessageTemplate.objects.create(
        name="announce_open", rev="r2", messages=[{"type": "text", "text": "{{ venue }} にて"}]
    )

    assert fire(key) == "failed"
    assert "venue" in texts(fake_backlog, key)[-1]
    assert line.sent() == []


def test_it_treats_an_empty_audience_as_an_error(approved, fake_backlog, line):
    key = approved(body().replace("tag:active, !tag:opt_out", "tag:nobody"))

    assert fire(key) == "failed"
    assert "対象者がいません" in texts(fake_backlog, key)[-1]


@pytest.mark.parametrize("fault", [{"status": 500}, {"status": 503}, {"status": 0, "delay": 2}])
def test_it_retries_server_errors_and_timeouts_after_30_seconds(approved, line, fault):
    key = approved()
    line.fail_next(**fault, path_prefix=MULTICAST)

    result = fire(key)

    schedule = schedule_of(key)
    assert result == "retry in 30s"
    assert schedule.attempts == 1 and schedule.stage == "deliver"
    assert abs((schedule.due_at - DUE).total_seconds() - 30) < 15
    assert DeliveryAttempt.objects.get().outcome == "retry"


def test_it_backs_off_30s_2m_10m_30m_1h_then_gives_up(approved, fake_backlog, line):
    key = approved()
    line.fail_next(500, count=6, path_prefix=MULTICAST)

    results = [fire(key) for _ in range(6)]

    assert results == [
        "retry in 30s",
        "retry in 120s",
        "retry in 600s",
        "retry in 1800s",
        "retry in 3600s",
        "failed",
    ]
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert "再試行の上限" in texts(fake_backlog, key)[-1]


def test_it_honours_retry_after_on_429_as_one_retry(approved, line):
    key = approved()
    line.fail_next(429, path_prefix=MULTICAST, headers={"Retry-After": "7"})

    assert fire(key) == "retry in 7s"
    assert schedule_of(key).attempts == 1


def test_it_ends_in_error_with_a_token_notice_on_401(approved, fake_backlog, line, tenant):
    key = approved()
    line.fail_next(401, path_prefix=MULTICAST)

    assert fire(key) == "failed"
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    comment = texts(fake_backlog, key)[-1]
    assert (
        comment.startswith("[automedia] 配信できませんでした: 認証エラー（401）")
        and "LINE チャネルのトークン" in comment
    )
    tenant.refresh_from_db()
    assert tenant.line_token_invalid_at is not None
    assert "LINE トークン" in mail.outbox[0].subject
    assert DeliveryAttempt.objects.count() == 1


def test_it_ends_in_error_with_lines_reason_on_422(approved, fake_backlog, line):
    key = approved()
    line.fail_next(
        422,
        path_prefix=MULTICAST,
        body={
            "message": "Failed to send messages",
            "details": [{"message": "invalid", "property": "messages[0]"}],
        },
    )

    assert fire(key) == "failed"
    assert "Failed to send messages" in texts(fake_backlog, key)[-1]
    assert schedule_of(key) is None


def test_it_ends_in_error_on_other_client_errors(approved, fake_backlog, line):
    key = approved()
    line.fail_next(400, path_prefix=MULTICAST)

    assert fire(key) == "failed"
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"


def test_a_send_accepted_before_a_lost_answer_is_not_posted_twice(approved, fake_backlog, line):
    key = approved()
    line.fail_next(500, path_prefix=MULTICAST, then_accept=True)

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"

    assert len(line.sent(MULTICAST)) == 1
    assert [a.outcome for a in DeliveryAttempt.objects.order_by("created_at")] == ["retry", "duplicate"]
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_it_retries_the_write_back_without_sending_again(approved, fake_backlog, line):
    key = approved()
    fake_backlog.fail_next(503, method="PATCH")

    assert fire(key) == "write-back retry"
    schedule = schedule_of(key)
    assert schedule.stage == "writeback" and ContentTask.objects.get(issue_key=key).delivered_at

    assert fire(key) == "delivered"
    assert len(line.sent()) == 1
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"
    assert schedule_of(key) is None


def test_it_does_not_comment_twice_after_a_crash_between_patch_and_cleanup(approved, fake_backlog, line):
    key = approved()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("deliveries.writeback.issue_update._finish", lambda *args, **kwargs: "crashed")
        fire(key)
    DeliverySchedule.objects.filter(task__issue_key=key).update(lease_until=None, claimed_by="")

    assert fire(key) == "delivered"
    assert sum(t.startswith("[automedia] 配信しました") for t in texts(fake_backlog, key)) == 1


def test_the_webhook_of_its_own_write_back_needs_no_backlog_read(approved, fake_backlog, line, tenant, pump):
    key = approved()
    fake_backlog.outbox.clear()
    assert fire(key) == "delivered"
    fake_backlog.reset_requests()

    pump(tenant)  # Backlog's webhook for automedia's own PATCH (and its comment)

    from backlog_bridge.models import BacklogEvent

    echo = BacklogEvent.objects.filter(issue_key=key, type=2).latest("activity_id")
    assert echo.detail == "own change, already applied"
    assert not [r for r in fake_backlog.requests if r.path == f"/api/v2/issues/{key}"]
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_a_status_change_by_a_person_is_still_reconciled(approved, fake_backlog, line, tenant, pump):
    key = approved()
    fake_backlog.outbox.clear()
    fire(key)
    pump(tenant)

    fake_backlog.update_issue(key, status="処理中")  # a manager moves it on afterwards
    pump(tenant)

    from deliveries.models import ContentTask

    assert ContentTask.objects.get(issue_key=key).status_name == "処理中"


@pytest.mark.django_db
def test_a_run_whose_holder_lost_its_lock_checks_its_claim_before_sending():
    make_schedule()
    [(schedule_id, queued)] = schedules_claim(now=timezone.now())
    held = schedules_take(claims=[(schedule_id, queued)], now=timezone.now())[schedule_id]
    run = Run(schedule=DeliverySchedule.objects.get(pk=schedule_id), token=held.owner, now=timezone.now())
    assert run.still_mine()  # a fresh lease, a live holder: no statement

    lose_holder()  # the process lives on, but its claims look abandoned: another takes them
    taken = lambda: schedule_id in dict(schedules_claim(now=timezone.now()))  # noqa: E731
    eventually(taken, "another claimer to take the row")

    assert not run.still_mine()  # its lease is far from over, yet the claim is gone

"""The notices of new 要対応 rows: exactly one per row, a burst in one message, by mail to the
tenant's managers or on LINE, and none while a manager has them turned off."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from console.models import AttentionNotice, DeliveryOutcome, NoticeSettings
from console.notices import notices_send
from console.tasks import attention_notices
from deliveries.models import STATUS_ERROR
from line.models import Trigger
from linepush.models import LinePushItem
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db

GROUP = "C" + "b" * 32


def failed(tenant, key: str, *, ago: timedelta = timedelta(minutes=1)):
    task = ContentTaskFactory(tenant=tenant, issue_key=key, summary=f"{key} の告知", status_name=STATUS_ERROR)
    row = DeliveryOutcome.objects.create(
        tenant=tenant, task=task, kind=DeliveryOutcome.Kind.REFUSED, detail="投稿日時が読めません"
    )
    DeliveryOutcome.objects.filter(pk=row.pk).update(created_at=timezone.now() - ago)
    return task


def test_a_new_row_produces_exactly_one_notice(manager, viewer, other_manager, tenant, mailoutbox):
    task = failed(tenant, "ACME-1")

    assert attention_notices() == 1
    assert attention_notices() == 0  # the next minute: nothing new

    [mail] = mailoutbox
    assert mail.to == [manager.email]  # the tenant's managers, not its viewers nor another tenant's
    assert (
        "要対応が 1 件" in mail.body
        and "承認不可 ACME-1" in mail.body
        and "投稿日時が読めません" in mail.body
    )
    assert f"/admin/deliveries/contenttask/{task.pk}/change/" in mail.body  # a link to the row
    assert AttentionNotice.objects.get().sent_to == manager.email


def test_a_burst_of_failures_is_one_message(manager, tenant, mailoutbox):
    for n in range(3):
        failed(tenant, f"ACME-{n + 1}")

    assert attention_notices() == 3

    [mail] = mailoutbox
    assert "要対応が 3 件" in mail.body
    assert all(f"ACME-{n + 1}" in mail.body for n in range(3))


def test_a_row_failing_again_later_is_new(manager, tenant, mailoutbox):
    task = failed(tenant, "ACME-1", ago=timedelta(hours=2))
    attention_notices()
    DeliveryOutcome.objects.create(tenant=tenant, task=task, kind=DeliveryOutcome.Kind.REFUSED, detail="また")

    attention_notices()

    assert len(mailoutbox) == 2


def test_it_sends_to_the_line_group_the_tenant_chose(manager, tenant, line, mailoutbox):
    NoticeSettings.objects.create(tenant=tenant, via=NoticeSettings.Via.LINE, line_to=GROUP)
    failed(tenant, "ACME-1")

    assert attention_notices() == 1

    [push] = line.sent("push")
    assert push.body["to"] == GROUP and "承認不可 ACME-1" in push.body["messages"][0]["text"]
    assert mailoutbox == []


def test_a_failed_send_is_tried_again_and_sent_once(manager, tenant, line):
    NoticeSettings.objects.create(tenant=tenant, via=NoticeSettings.Via.LINE, line_to=GROUP)
    failed(tenant, "ACME-1")
    line.fail_next(500, path_prefix="/v2/bot/message/push")

    assert notices_send(tenant=tenant, now=timezone.now()) == 0
    assert notices_send(tenant=tenant, now=timezone.now()) == 1
    assert notices_send(tenant=tenant, now=timezone.now()) == 0
    assert len(line.sent("push")) == 1


def test_a_manager_turns_the_notices_off(manager, tenant, mailoutbox):
    choice = NoticeSettings.objects.create(tenant=tenant, enabled=False)
    failed(tenant, "ACME-1")

    assert attention_notices() == 0
    choice.enabled = True
    choice.save()
    assert attention_notices() == 0  # what came while they were off is not sent later

    assert mailoutbox == []
    assert AttentionNotice.objects.get().sent_to == "通知しない設定"


def test_rows_older_than_a_day_are_not_news(manager, tenant, mailoutbox):
    failed(tenant, "ACME-1", ago=timedelta(days=2))

    assert attention_notices() == 0
    assert mailoutbox == []


def test_a_failed_group_post_is_told_in_japanese_not_in_lines_english(manager, tenant, mailoutbox):
    LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id=GROUP,
        trigger_type=Trigger.REMINDER,
        payload=[{"type": "text", "text": "明日 10:00 撮影です"}],
        dedupe_key="reminder:acme:1",
        scheduled_at=timezone.now(),
        status=LinePushItem.Status.FAILED,
        last_error="LINE が 400 を返しました: The request body has 1 error(s) / messages[0].text: May not be empty",
    )

    assert attention_notices() == 1

    [mail] = mailoutbox
    assert "LINE が 400 を返しました" in mail.body
    assert "The request body" not in mail.body and "May not be empty" not in mail.body

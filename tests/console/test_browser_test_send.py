"""テスト配信 in Chromium at 1366 × 900, as a manager: a task's preview and a group post's
page send the rendered message to the tenant's test recipients on the fake LINE, marked as
a test, and leave the task, its Backlog issue and the group post as they were."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from console.models import DeliveryOutcome, LineTestRecipient
from core.timeutil import JST
from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule
from linepush.models import LinePushItem
from tests.helpers.backlog import body
from tests.helpers.browser import LAPTOP, manager_logged_in, shoot
from tests.helpers.console import mirrored_issue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ME = "U" + "1" * 32
GROUP = "C" + "a" * 32


def _task_fields(task: ContentTask) -> dict:
    fields = (
        "status_name",
        "approved_at",
        "approval_seq",
        "delivered_at",
        "approval_checks",
        "last_synced_at",
    )
    return {name: getattr(task, name) for name in fields}


def test_it_sends_a_tasks_preview_to_the_managers_own_line_as_a_test(
    page: Page, live_server, fake_backlog, pump, tenant, template, contacts, line
):
    line.set_quota(type="limited", value=200, total_usage=6)
    when = (timezone.now() + timedelta(days=2)).astimezone(JST)
    task = mirrored_issue(
        fake_backlog,
        pump,
        tenant,
        summary="冬季営業時間のお知らせ",
        description=body(when=f"{when:%Y-%m-%d %H:%M}"),
    )
    LineTestRecipient.objects.create(tenant=tenant, name="山田（自分）", user_id=ME)
    before, comments = _task_fields(task), len(fake_backlog.comments(task.issue_key))
    manager_logged_in(page, live_server, tenant)
    page.set_viewport_size(LAPTOP)

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{task.pk}/preview/")
    page.click("#test-send")
    expect(page.locator(".messagelist")).to_contain_text("テスト配信を 山田（自分） に送りました")
    expect(page.locator("#line-preview")).to_be_visible()  # back on the preview
    shoot(page, "test-send")

    [sent] = line.sent("push")
    assert sent.body["to"] == ME
    text = sent.body["messages"][0]["text"]
    assert text.startswith(f"【テスト配信】{task.issue_key}") and "営業時間は 7:00-18:00" in text
    task.refresh_from_db()
    assert _task_fields(task) == before
    assert not DeliveryAttempt.objects.filter(task=task).exists()
    assert not DeliveryOutcome.objects.filter(task=task).exists()
    assert not DeliverySchedule.objects.filter(task=task).exists()
    assert len(fake_backlog.comments(task.issue_key)) == comments


def test_it_sends_a_group_post_to_the_managers_own_line_not_to_the_group(
    page: Page, live_server, tenant, line
):
    LineTestRecipient.objects.create(tenant=tenant, name="山田（自分）", user_id=ME)
    item = LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id=GROUP,
        trigger_type="reminder",
        payload=[{"type": "text", "text": "明日 10 時から撮影です。"}],
        dedupe_key="reminder:1",
        scheduled_at=timezone.now() + timedelta(hours=1),
        status=LinePushItem.Status.WAITING_APPROVAL,
    )
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/linepush/linepushitem/{item.pk}/change/")
    page.click("#test-send")
    expect(page.locator(".messagelist")).to_contain_text("テスト配信を 山田（自分） に送りました")

    [sent] = line.sent("push")
    assert sent.body["to"] == ME
    assert sent.body["messages"][0]["text"].startswith("【テスト配信】")
    assert "明日 10 時から撮影です。" in sent.body["messages"][0]["text"]
    item.refresh_from_db()
    assert (item.status, item.attempt_count, item.sent_at) == (LinePushItem.Status.WAITING_APPROVAL, 0, None)

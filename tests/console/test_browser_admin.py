"""The admin's own pages in Chromium: Japanese only, readable settings, the task list at a
laptop's width, bulk actions with a confirmation page, the index grouped by what a manager does.

Playwright drives Debian's /usr/bin/chromium (fixtures: tests/console/conftest.py).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Page, expect

from console.models import DeliveryOutcome
from core.models import TenantMembership
from core.timeutil import JST
from deliveries.models import (
    STATUS_APPROVED,
    STATUS_DELIVERED,
    STATUS_ERROR,
    DeliveryAttempt,
    DeliverySchedule,
)
from tests.helpers.backlog import body, status_of
from tests.helpers.browser import PASSWORD, log_in, manager_logged_in, shoot
from tests.helpers.console import member, mirrored_issue
from tests.helpers.factories import ContentTaskFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ENGLISH_MODELS = (
    "Failed tasks",
    "Queued tasks",
    "Scheduled tasks",
    "Successful tasks",
    "Access attempts",
    "Access failures",
    "Access logs",
)


def superuser_logged_in(page: Page, live_server):
    get_user_model().objects.create_superuser("root", "root@example.jp", PASSWORD)
    log_in(page, live_server, "root")


@pytest.fixture
def delivered(tenant):
    task = ContentTaskFactory(
        tenant=tenant,
        issue_key="ACME-7",
        summary="配信済みの告知",
        channel="tiktok",
        status_name=STATUS_DELIVERED,
    )
    DeliveryAttempt.objects.create(
        tenant=tenant,
        task=task,
        approval_seq=1,
        channel="tiktok",
        endpoint="/v2/post/publish/video/init/",
        outcome="sent",
        status_code=200,
        duration_ms=412,
    )
    DeliveryOutcome.objects.create(
        tenant=tenant, task=task, kind=DeliveryOutcome.Kind.SENT, detail="delivered"
    )
    return task


def test_it_speaks_only_japanese_to_a_superuser_and_a_manager(page: Page, live_server, tenant, delivered):
    superuser_logged_in(page, live_server)
    for path in ("/admin/", "/admin/django_q/failure/"):
        page.goto(live_server.url + path)
        shown = page.locator("body").inner_text()
        assert [name for name in ENGLISH_MODELS if name.lower() in shown.lower()] == [], path
    expect(page.locator("#nav-sidebar")).to_contain_text("失敗したタスク")
    expect(page.locator("#nav-sidebar")).to_contain_text("ログイン保護")

    page.context.clear_cookies()
    manager_logged_in(page, live_server, tenant)
    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{delivered.pk}/change/")
    heads = page.locator(".inline-group thead").inner_text()
    assert not re.search(r"APPROVAL|ENDPOINT|\(MS\)", heads, re.I), heads
    expect(page.locator(".inline-group thead")).to_contain_text("承認回数")
    expect(page.locator(".field-channel_label")).to_contain_text("TikTok")
    row = page.locator(".inline-group tbody tr.has_original").first
    expect(row).to_contain_text("送信済み (200)")
    expect(row).not_to_contain_text("sent 200")
    shoot(page, "task-detail")

    page.goto(f"{live_server.url}/admin/console/deliveryoutcome/")
    expect(page.locator("#result_list")).to_contain_text("配信済み")
    expect(page.locator("#result_list")).not_to_contain_text("delivered")


def _select(page: Page, keys: list[str], action: str) -> None:
    for key in keys:
        page.locator("#result_list tr", has_text=key).locator("input.action-select").check()
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")


def test_it_retries_and_cancels_in_bulk_after_a_confirmation(
    page: Page, live_server, fake_backlog, pump, tenant, other, template, contacts, line
):
    line.set_quota(type="none", total_usage=0)
    when = f"{(timezone.now() + timedelta(days=2)).astimezone(JST):%Y-%m-%d} 10:00"
    failed = [
        mirrored_issue(
            fake_backlog,
            pump,
            tenant,
            summary=f"トークン切れ {n}",
            description=body(when=when),
            status=STATUS_ERROR,
        )
        for n in range(2)
    ]
    open_task = mirrored_issue(
        fake_backlog, pump, tenant, summary="未承認の告知", description=body(when=when)
    )
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/")
    _select(page, [t.issue_key for t in [*failed, open_task]], "retry_selected")
    steps = page.locator("#bulk-steps")
    expect(steps.locator("tr[data-ok='1']")).to_have_count(2)
    expect(steps.locator("tr[data-ok='0']")).to_contain_text(open_task.issue_key)
    expect(steps.locator("tr[data-ok='0']")).to_contain_text("だけ再試行できます")
    assert not DeliverySchedule.objects.filter(task__in=failed).exists()  # nothing done before confirming
    shoot(page, "bulk-confirm")
    page.click("#bulk-confirm")
    expect(page.locator(".messagelist")).to_contain_text("2 件を再試行しました")
    assert DeliverySchedule.objects.filter(task__in=failed).count() == 2
    assert {status_of(fake_backlog, t.issue_key) for t in failed} == {STATUS_APPROVED}

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/")
    _select(page, [t.issue_key for t in failed], "cancel_selected")
    expect(page.locator("#bulk-steps tr[data-ok='1']")).to_have_count(2)
    expect(page.locator("#bulk-steps")).to_contain_text("の配信予約を削除し")
    page.click("#bulk-confirm")
    expect(page.locator(".messagelist")).to_contain_text("2 件の予約を取り消しました")
    assert not DeliverySchedule.objects.filter(task__in=failed).exists()


def test_it_lets_a_viewer_confirm_nothing_in_bulk(page: Page, live_server, tenant, fake_backlog, pump):
    task = mirrored_issue(fake_backlog, pump, tenant, summary="閲覧だけ", status=STATUS_ERROR)
    viewer = member("sato", tenant, TenantMembership.Role.VIEWER)
    viewer.set_password(PASSWORD)
    viewer.save()
    log_in(page, live_server, "sato")

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/")
    _select(page, [task.issue_key], "retry_selected")
    expect(page.locator("#bulk-steps")).to_contain_text("閲覧のみ")
    expect(page.locator("#bulk-confirm")).to_have_count(0)
    assert not DeliverySchedule.objects.filter(task=task).exists()

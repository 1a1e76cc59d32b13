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
from core.models import Tenant, TenantMembership
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
    page.goto(f"{live_server.url}/admin/axes/")
    expect(page.locator("#content")).to_contain_text("ログイン保護")

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


def test_it_groups_the_index_by_what_a_manager_does(page: Page, live_server, tenant):
    manager_logged_in(page, live_server, tenant)

    captions = page.locator(
        "#content-main .app-list caption, #content-main .module caption"
    ).all_inner_texts()
    groups = [c.strip() for c in captions if c.strip()]
    assert groups == ["配信", "LINE グループ投稿", "設定", "記録"], groups
    expect(page.locator("#user-tools")).not_to_contain_text("サイトを表示")
    expect(page.locator("#content-main")).not_to_contain_text("システム")
    page.goto(f"{live_server.url}/admin/deliveries/contenttask/")
    sidebar = [c.strip() for c in page.locator("#nav-sidebar caption").all_inner_texts() if c.strip()]
    assert sidebar == ["配信", "LINE グループ投稿", "設定", "記録"], sidebar

    page.context.clear_cookies()
    superuser_logged_in(page, live_server)
    captions = [
        c.strip() for c in page.locator("#content-main .module caption").all_inner_texts() if c.strip()
    ]
    assert captions[-1] == "システム（スーパーユーザーのみ）", captions
    expect(page.locator("#content-main .app-system")).to_contain_text("失敗したタスク")


def test_it_fits_the_task_list_in_a_laptops_width_with_the_sidebar_open(
    page: Page, live_server, tenant, other
):
    for n in range(3):
        task = ContentTaskFactory(
            tenant=tenant,
            issue_key=f"ACME-{300 + n}",
            summary="年末年始の営業時間と休業日のお知らせ（全店舗・オンラインストア共通）",
            channel="instagram",
            status_name=STATUS_APPROVED,
            publish_at=timezone.now() + timedelta(days=n + 1),
        )
        DeliverySchedule.objects.create(
            tenant=tenant, task=task, name=f"s-{n}", due_at=task.publish_at, reason="approval"
        )
        DeliveryAttempt.objects.create(
            tenant=tenant,
            task=task,
            approval_seq=1,
            channel="instagram",
            endpoint="/media",
            outcome="retry",
            status_code=503,
        )
    TenantMembership.objects.create(
        user=manager_logged_in(page, live_server, tenant), tenant=other, role=TenantMembership.Role.MANAGER
    )
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/admin/deliveries/contenttask/")
    expect(page.locator("#nav-sidebar")).to_be_visible()

    right = page.evaluate("document.documentElement.clientWidth")
    for column in ("status", "last_attempt", "tenant_slug"):
        cell = page.locator(f"#result_list td.field-{column}").first.bounding_box()
        assert cell is not None and cell["x"] + cell["width"] <= right, (column, cell, right)
    badge = page.locator("#result_list .am-status").first.bounding_box()
    status_cell = page.locator("#result_list td.field-status").first.bounding_box()
    assert badge["x"] + badge["width"] <= status_cell["x"] + status_cell["width"] + 0.5
    assert page.evaluate("document.documentElement.scrollWidth") <= right
    shoot(page, "task-list")


def test_it_edits_the_quiet_hours_with_time_fields_and_shows_what_the_system_sets(
    page: Page, live_server, tenant
):
    Tenant.objects.filter(pk=tenant.pk).update(line_token_invalid_at=timezone.now())
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/core/tenant/{tenant.pk}/change/")
    expect(page.locator("textarea[name=quiet_hours]")).to_have_count(0)
    expect(page.locator("input[name^=line_token_invalid_at]")).to_have_count(0)
    expect(page.locator(".field-line_token_invalid_at")).to_be_visible()
    page.check("input[name=quiet_hours_0]")
    page.select_option("select[name=quiet_hours_1]", "defer")
    page.fill("input[name=quiet_hours_3]", "22:00")
    page.fill("input[name=quiet_hours_4]", "07:00")
    shoot(page, "settings")
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist")).to_be_visible()
    tenant.refresh_from_db()
    assert tenant.quiet_hours == {
        "enabled": True,
        "timezone": "Asia/Tokyo",
        "ranges": [{"from": "22:00", "to": "07:00"}],
        "mode": "defer",
    }
    expect(page.locator("input[name=quiet_hours_3]")).to_have_value("22:00")


def test_it_edits_the_operators_as_rows_of_a_type_and_a_value(page: Page, live_server, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(operators=["id:1001", "user:sato"])
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/core/tenant/{tenant.pk}/change/")
    expect(page.locator("textarea[name=operators]")).to_have_count(0)
    rows = page.locator("#operators tbody tr.am-operator-row")
    expect(rows).to_have_count(3)  # the two entries and an empty row to add to
    expect(rows.nth(0).locator("select")).to_have_value("id")
    expect(rows.nth(0).locator("input")).to_have_value("1001")
    rows.nth(1).locator(".am-operator-remove").click()  # sato goes
    expect(rows).to_have_count(2)
    rows.nth(1).locator("select").select_option("user")
    rows.nth(1).locator("input").fill("yamada")
    page.click("#operators .am-operator-add")
    expect(rows).to_have_count(3)
    rows.nth(2).locator("input").fill("yamada taro")  # an ID that is no number, a space
    page.click("input[name=_continue]")

    expect(page.locator("#operators .am-operator-error")).to_have_count(1)
    invalid = page.locator("#operators tr.am-operator-invalid")
    expect(invalid.locator("input")).to_have_value("yamada taro")
    expect(invalid).to_contain_text("ID は Backlog の数値のユーザーIDです")
    tenant.refresh_from_db()
    assert tenant.operators == ["id:1001", "user:sato"]  # nothing saved while a row is refused

    invalid.locator("input").fill("2002")
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist")).to_be_visible()
    tenant.refresh_from_db()
    assert tenant.operators == ["id:1001", "user:yamada", "id:2002"]
    expect(page.locator("#operators tbody tr.am-operator-row input")).to_have_count(4)

"""What needs a manager, seen in Chromium: refusals, failures and missed posts on the dashboard
and the calendar, the real state of a task on its preview, one LINE usage figure.

Playwright drives Debian's /usr/bin/chromium (fixtures: tests/console/conftest.py).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from console.models import DeliveryOutcome
from core.timeutil import JST
from deliveries.models import STATUS_APPROVED, STATUS_ERROR, DeliveryAttempt, DeliverySchedule
from line.models import LinePushSettings, LineSource
from linepush.models import LinePushItem
from tests.helpers.backlog import approve, body, status_of
from tests.helpers.browser import LAPTOP, clipped_cells, manager_logged_in, shoot
from tests.helpers.console import mirrored_issue
from tests.helpers.factories import ContentTaskFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GROUP = "C" + "a" * 32


def _refused(fake_backlog, pump, tenant, summary: str, description: str):
    task = mirrored_issue(fake_backlog, pump, tenant, summary=summary, description=description)
    approve(fake_backlog, pump, tenant, task.issue_key)
    task.refresh_from_db()
    assert task.status_name == STATUS_ERROR, summary
    return task


def _later(hours: int = 48) -> str:
    return f"{(timezone.now() + timedelta(hours=hours)).astimezone(JST):%Y-%m-%d %H:%M}"


@pytest.fixture
def trouble(fake_backlog, pump, tenant, other, template, contacts, line):
    """acme: three refused approvals, a failed delivery, a missed post, a failed group post;
    other: a refusal of its own."""
    line.set_quota(type="limited", value=200, total_usage=6)
    now = timezone.now()
    refused = {
        "date": _refused(fake_backlog, pump, tenant, "日付の読めない告知", body(when="来週の月曜の朝")),
        "channel": _refused(
            fake_backlog, pump, tenant, "チャネル綴り違い", body(when=_later()).replace("LINE", "LIEN")
        ),
        "variable": _refused(
            fake_backlog,
            pump,
            tenant,
            "変数の足りない告知",
            body(when=_later()).replace("- hours: 7:00-18:00\n", ""),
        ),
    }
    failed = ContentTaskFactory(
        tenant=tenant,
        issue_key="ACME-90",
        summary="配信に失敗した告知",
        channel="line",
        status_name=STATUS_ERROR,
    )
    DeliveryAttempt.objects.create(
        tenant=tenant,
        task=failed,
        approval_seq=1,
        channel="line",
        endpoint="/v2/bot/message/multicast",
        outcome="failed",
        status_code=401,
        error="LINE がトークンを拒否しました (401)",
    )
    DeliveryOutcome.objects.create(tenant=tenant, task=failed, kind=DeliveryOutcome.Kind.FAILED)
    missed = ContentTaskFactory(
        tenant=tenant,
        issue_key="ACME-91",
        summary="承認忘れの告知",
        channel="line",
        status_name="処理中",
        publish_at=now - timedelta(hours=2),
    )
    LineSource.objects.create(tenant=tenant, group_id=GROUP, name="タレント連絡グループ")
    LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id=GROUP,
        trigger_type="reminder",
        payload=[{"type": "text", "text": "撮影"}],
        dedupe_key="reminder:1",
        scheduled_at=now,
        status=LinePushItem.Status.FAILED,
        last_error="LINE が 400 を返しました",
    )
    ContentTaskFactory(
        tenant=other,
        issue_key="OTHER-5",
        summary="他社の承認忘れ",
        channel="line",
        status_name="処理中",
        publish_at=now - timedelta(hours=1),
    )
    return {"refused": refused, "failed": failed, "missed": missed}


def test_it_lists_refusals_and_failures_as_needing_attention(page: Page, live_server, trouble, tenant):
    manager_logged_in(page, live_server, tenant)

    expect(page.locator("#card-attention")).to_have_text("6")
    attention = page.locator("#attention")
    refusals = attention.locator("tr[data-kind=refused]")
    expect(refusals).to_have_count(3)
    expect(refusals.filter(has_text="日付の読めない告知")).to_contain_text("来週の月曜の朝")
    expect(refusals.filter(has_text="チャネル綴り違い")).to_contain_text("LIEN")
    expect(refusals.filter(has_text="変数の足りない告知")).to_contain_text("hours")
    expect(refusals.first).to_contain_text("承認不可")
    expect(attention.locator("tr[data-kind=failed]")).to_contain_text("トークンを拒否")
    expect(attention.locator("tr[data-kind=push_failed]")).to_contain_text("タレント連絡グループ")
    expect(attention).not_to_contain_text("他社")
    expect(page.locator("#failures")).to_contain_text("変数の足りない告知")
    expect(page.locator("#failures")).not_to_contain_text("失敗した配信・承認不可はありません")
    shoot(page, "dashboard")

    page.click("#attention >> text=" + trouble["refused"]["date"].issue_key)
    expect(page.locator("#content")).to_contain_text("日付の読めない告知")

    page.goto(f"{live_server.url}/admin/console/deliveryoutcome/")
    expect(page.locator("#result_list")).to_contain_text("承認不可")
    expect(page.locator("#result_list")).to_contain_text("チャネル綴り違い")


def test_it_keeps_a_missed_post_on_the_dashboard_and_the_calendar(page: Page, live_server, trouble, tenant):
    missed = trouble["missed"]
    manager_logged_in(page, live_server, tenant)

    row = page.locator("#attention tr[data-kind=missed]")
    expect(row).to_contain_text(missed.issue_key)
    expect(row).to_contain_text("期限切れ（未承認）")
    expect(row).to_contain_text("投稿日時を過ぎても承認されていません")

    page.click("#calendar-link")
    page.goto(f"{page.url}?date={missed.publish_at.astimezone(JST):%Y-%m-%d}")  # its week, even on a Monday
    entry = page.locator("#calendar-grid .am-cal-entry.am-st-missed")
    expect(entry).to_contain_text(missed.issue_key)
    expect(page.locator("#calendar-legend")).to_contain_text("期限切れ（未承認）")
    expect(page.locator("#calendar")).not_to_contain_text("他社の承認忘れ")


def test_it_says_a_past_due_approval_goes_out_now(
    page: Page, live_server, fake_backlog, pump, tenant, template, contacts, line
):
    line.set_quota(type="limited", value=200, total_usage=6)
    passed = (timezone.now() - timedelta(hours=3)).astimezone(JST).replace(second=0, microsecond=0)
    task = mirrored_issue(
        fake_backlog, pump, tenant, summary="遅れた告知", description=body(when=f"{passed:%Y-%m-%d %H:%M}")
    )
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{task.pk}/change/")
    page.click("#task-approve")
    message = page.locator(".messagelist")
    expect(message).to_contain_text("を過ぎているため、今すぐ")
    expect(message).to_contain_text(f"{passed:%Y-%m-%d %H:%M}")
    comments = [c["content"] for c in fake_backlog.comments(task.issue_key) if c["content"]]
    assert any(
        f"投稿日時 {passed:%Y-%m-%d %H:%M}" in c and "を過ぎているため、今すぐ配信します" in c
        for c in comments
    ), comments


def test_it_previews_the_real_state_of_a_task(page: Page, live_server, trouble, fake_backlog, pump, tenant):
    delivered = mirrored_issue(
        fake_backlog, pump, tenant, summary="配信済みの告知", description=body(when=_later())
    )
    sent_at = timezone.now() - timedelta(hours=1)
    type(delivered).objects.filter(pk=delivered.pk).update(delivered_at=sent_at)
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{delivered.pk}/preview/")
    state = page.locator("#preview-due")
    expect(state).to_contain_text(f"配信済み: {sent_at.astimezone(JST):%Y-%m-%d %H:%M}")
    expect(state).not_to_contain_text("承認すると予約されます")

    refused = trouble["refused"]["channel"]
    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{refused.pk}/preview/")
    expect(page.locator("#preview-due")).to_contain_text("承認不可")
    expect(page.locator("#preview-due")).to_contain_text("LIEN")


def test_it_shows_one_line_usage_figure_everywhere(
    page: Page, live_server, fake_backlog, pump, tenant, template, contacts, line
):
    line.set_quota(type="limited", value=5000, total_usage=6)
    settings = LinePushSettings.objects.create(tenant=tenant)  # no plan chosen: LINE's limit alone
    task = mirrored_issue(fake_backlog, pump, tenant, summary="使用数の確認", description=body(when=_later()))
    manager_logged_in(page, live_server, tenant)

    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{task.pk}/change/")
    page.click("#task-approve")
    expect(page.locator(".messagelist")).to_contain_text("に配信を予約しました")
    comment = [c["content"] for c in fake_backlog.comments(task.issue_key) if c["content"]][-1]
    assert "今月 6 / LINE の上限 5,000" in comment, comment

    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("#quota")).to_contain_text("今月 6 / 5,000 通")
    expect(page.locator("#quota")).not_to_contain_text("上限不明")

    page.goto(f"{live_server.url}/admin/line/linepushsettings/{settings.pk}/change/")
    expect(page.locator(".field-month_usage_detail")).to_contain_text("今月 6 / 5,000 通")
    expect(page.locator(".field-plan_label")).to_contain_text("プラン未設定（LINE の上限だけで判定）")
    page.goto(f"{live_server.url}/admin/line/linepushsettings/")
    expect(page.locator("#result_list")).to_contain_text("今月 6 / 5,000 通")


def test_it_acts_on_a_row_where_the_problem_is_shown(
    page: Page, live_server, trouble, fake_backlog, pump, tenant
):
    broken = mirrored_issue(
        fake_backlog,
        pump,
        tenant,
        summary="トークン切れの告知",
        description=body(when=_later()),
        status=STATUS_ERROR,
    )
    manager_logged_in(page, live_server, tenant)
    page.set_viewport_size(LAPTOP)
    attention = page.locator("#attention")
    assert clipped_cells(page, "#attention th, #attention td") == []

    refused = trouble["refused"]["date"]
    row = attention.locator("tr[data-kind=refused]", has_text=refused.issue_key)
    row.locator("[data-action=fix] summary").click()
    expect(row.locator("[data-action=fix]")).to_contain_text("来週の月曜の朝")
    expect(row.locator("[data-action=fix]")).to_contain_text("automedia承認")
    link = row.locator("a[data-action=backlog]").get_attribute("href")
    assert link == f"{fake_backlog.base_url}/view/{refused.issue_key}"
    assert page.request.get(link).ok  # the fake Backlog answers real Backlog's link

    attention.locator("tr", has_text=broken.issue_key).locator("button[data-action=retry]").click()
    expect(page.locator("#bulk-steps tr[data-ok='1']")).to_have_count(1)
    expect(page.locator("#bulk-steps")).to_contain_text(broken.issue_key)
    assert not DeliverySchedule.objects.filter(task=broken).exists()  # nothing before the confirmation
    page.click("#bulk-confirm")
    expect(page.locator(".messagelist")).to_contain_text("1 件を再試行しました")
    assert page.url == f"{live_server.url}/admin/"
    expect(attention).not_to_contain_text(broken.issue_key)
    assert DeliverySchedule.objects.filter(task=broken).exists()
    assert status_of(fake_backlog, broken.issue_key) == STATUS_APPROVED

    attention.locator("tr[data-kind=push_failed] button[data-action=cancel]").click()
    expect(page.locator("#bulk-steps")).to_contain_text("送信せずに終えます")
    page.click("#bulk-confirm")
    expect(page.locator(".messagelist")).to_contain_text("1 件の失敗投稿を取り消しました")
    expect(attention.locator("tr[data-kind=push_failed]")).to_have_count(0)
    assert LinePushItem.objects.get(ext_group_id=GROUP).status == LinePushItem.Status.SKIPPED

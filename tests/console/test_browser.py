"""The managers' admin in a real browser: Playwright driving Debian's Chromium against a live server.

`make test` installs Chromium (apt-get) when /usr/bin/chromium is missing; without it these
tests fail, never skip. Playwright's own browser download is never used. Screenshots:
tests/helpers/browser.py.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from console.models import DeliveryOutcome
from core.models import TenantMembership
from core.timeutil import JST
from deliveries.models import (
    STATUS_APPROVED,
    DeliverySchedule,
)
from line.models import LineSource
from linepush.models import LinePushItem
from tests.helpers.browser import BANNER_URL, PASSWORD, log_in, shoot
from tests.helpers.console import member
from tests.helpers.factories import ContentTaskFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_lets_a_manager_run_the_day_from_the_admin(page: Page, live_server, scene, tenant, fake_backlog):
    manager = member("yamada", tenant, TenantMembership.Role.MANAGER)
    manager.set_password(PASSWORD)
    manager.save()
    task, url = scene["task"], live_server.url

    log_in(page, live_server, "yamada")
    expect(page.locator("#dashboard")).to_be_visible()
    expect(page.locator("#card-waiting")).to_have_text("1")

    # the task list, then approve one task and see it scheduled
    page.goto(f"{url}/admin/deliveries/contenttask/")
    expect(page.locator("#result_list")).to_contain_text("冬季営業時間のお知らせ")
    expect(page.locator("#result_list")).not_to_contain_text("他社の秘密の告知")
    page.click("text=冬季営業時間のお知らせ")
    page.click("#task-approve")
    expect(page.locator(".messagelist")).to_contain_text("に配信を予約しました")
    expect(page.locator("#schedule-panel")).to_contain_text("承認")
    assert DeliverySchedule.objects.filter(task=task).exists()
    assert fake_backlog.issue(task.issue_key)["status"]["name"] == STATUS_APPROVED
    page.goto(f"{url}/admin/deliveries/contenttask/")
    expect(page.locator("#result_list")).to_contain_text(STATUS_APPROVED)

    # the preview: bubbles, audience, due time, quiet hours; no JSON for a manager
    page.goto(f"{url}/admin/deliveries/contenttask/{task.pk}/change/")
    page.click("#task-preview")
    expect(page.locator(".am-bubble[data-kind=text]")).to_contain_text("の営業時間は 7:00-18:00 です")
    # the banner's host is not one the tenant allows: it loads only when asked
    held = page.locator(f".am-bubble[data-kind=image] .am-image-held[data-src='{BANNER_URL}']")
    expect(held).to_contain_text("example.jp")
    expect(page.locator(f"img[src='{BANNER_URL}']")).to_have_count(0)
    # The button's handler is console.js, a deferred script: a click before it ran does nothing.
    page.wait_for_load_state("domcontentloaded")
    held.locator(".am-image-load").click()
    expect(page.locator(f".am-bubble[data-kind=image] img[src='{BANNER_URL}']")).to_be_visible()
    expect(page.locator("#preview-audience")).to_contain_text("3 人")
    expect(page.locator("#preview-due")).to_contain_text("予約済み")
    expect(page.locator("#preview-quiet")).to_contain_text("対象外")
    expect(page.locator("#preview-json")).to_have_count(0)
    shoot(page, "preview")

    # cancel: the schedule goes, the status moves back
    page.goto(f"{url}/admin/deliveries/contenttask/{task.pk}/change/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#task-cancel")
    expect(page.locator(".messagelist")).to_contain_text("状態を「処理中」に戻しました")
    assert not DeliverySchedule.objects.filter(task=task).exists()

    # approve a waiting LINE post
    page.goto(f"{url}/admin/console/pushapproval/")
    expect(page.locator("#result_list")).not_to_contain_text("他社の承認待ち")
    page.click("button[data-action=approve]")
    expect(page.locator(".messagelist")).to_contain_text("を承認しました")
    waiting = LinePushItem.objects.get(pk=scene["waiting"].pk)
    assert (waiting.status, waiting.approved_by) == (LinePushItem.Status.PENDING, manager)

    # toggle a group's outbound pushes and an opted-in trigger in the list
    page.goto(f"{url}/admin/line/linesource/")
    expect(page.locator("#result_list")).not_to_contain_text("他社のグループ")
    page.check("input[name=form-0-allow_outbound_push]")
    page.check("input[name=form-0-push_opt_in_triggers][value=reminder]")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_be_visible()
    group = LineSource.objects.get(pk=scene["group"].pk)
    assert (group.allow_outbound_push, group.push_opt_in_triggers) == (True, ["reminder"])
    page.goto(f"{url}/admin/line/linesource/{group.pk}/change/")
    expect(page.locator(".field-audit_trail")).to_contain_text("yamada")


def test_it_shows_another_tenants_manager_none_of_it(page: Page, live_server, scene, other):
    outsider = member("suzuki", other, TenantMembership.Role.MANAGER)
    outsider.set_password(PASSWORD)
    outsider.save()
    url, task = live_server.url, scene["task"]

    log_in(page, live_server, "suzuki")
    expect(page.locator("#dashboard")).not_to_contain_text("冬季営業時間")
    page.goto(f"{url}/admin/deliveries/contenttask/")
    expect(page.locator("#result_list")).to_contain_text("他社の秘密の告知")
    expect(page.locator("#result_list")).not_to_contain_text("冬季営業時間のお知らせ")

    for path in (
        f"/admin/deliveries/contenttask/{task.pk}/change/",
        f"/admin/deliveries/contenttask/{task.pk}/preview/",
        f"/admin/line/linesource/{scene['group'].pk}/change/",
        f"/admin/linepush/linepushitem/{scene['waiting'].pk}/change/",
    ):
        assert page.goto(url + path).status == 404, path

    page.goto(f"{url}/admin/console/pushapproval/")
    expect(page.locator("#result_list")).to_contain_text("他社の承認待ち")
    expect(page.locator("#result_list")).not_to_contain_text("配信エラーのまま")
    page.goto(f"{url}/admin/line/linesource/")
    expect(page.locator("#result_list")).not_to_contain_text("タレント連絡グループ")
    assert not DeliverySchedule.objects.filter(task=task).exists()


# -- 配信カレンダー: a week of every channel and state (docs/screenshots/calendar*.png) ------


GROUP = "C" + "a" * 32


def _monday() -> datetime:
    today = timezone.now().astimezone(JST).date()
    return datetime.combine(today - timedelta(days=today.weekday()), time(0), tzinfo=JST)


def _task(tenant, key: str, summary: str, channel: str, **fields):
    return ContentTaskFactory(tenant=tenant, issue_key=key, summary=summary, channel=channel, **fields)


def _ended(tenant, key: str, summary: str, channel: str, when: datetime, kind: str) -> None:
    row = DeliveryOutcome.objects.create(tenant=tenant, task=_task(tenant, key, summary, channel), kind=kind)
    DeliveryOutcome.objects.filter(pk=row.pk).update(created_at=when)


def _scheduled(tenant, key: str, summary: str, channel: str, when: datetime):
    task = _task(tenant, key, summary, channel, status_name=STATUS_APPROVED, publish_at=when)
    DeliverySchedule.objects.create(tenant=tenant, task=task, name=f"s-{key}", due_at=when, reason="approval")
    return task


def _post(tenant, key: str, when: datetime, status: str, text: str) -> None:
    LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id=GROUP,
        trigger_type="reminder" if status != LinePushItem.Status.WAITING_APPROVAL else "escalation",
        payload=[{"type": "text", "text": text}],
        dedupe_key=key,
        scheduled_at=when,
        status=status,
        sent_at=when if status == LinePushItem.Status.SENT else None,
    )


@pytest.fixture
def week(tenant, other):
    """This week of acme (quiet 22:00–07:00): each channel and state once or more; one post of other's."""
    tenant.name, tenant.quiet_hours = "エーシーエム事務所", {"ranges": [{"from": "22:00", "to": "07:00"}]}
    tenant.save()
    LineSource.objects.create(tenant=tenant, group_id=GROUP, name="タレント連絡グループ")
    day = _monday()
    sent, failed = DeliveryOutcome.Kind.SENT, DeliveryOutcome.Kind.FAILED
    _ended(tenant, "ACME-11", "週末セールの告知", "line", day + timedelta(hours=9), sent)
    _post(tenant, "reminder:1", day + timedelta(hours=12), LinePushItem.Status.SENT, "撮影は 14 時からです")
    _ended(tenant, "ACME-12", "新作リール", "instagram", day + timedelta(days=1, hours=10), sent)
    _ended(tenant, "ACME-13", "舞台裏ショート", "tiktok", day + timedelta(days=1, hours=19), failed)
    _scheduled(
        tenant, "ACME-14", "会員向けニュースレター", "hubspot", day + timedelta(days=2, hours=8, minutes=30)
    )
    _scheduled(tenant, "ACME-15", "深夜のお知らせ", "line", day + timedelta(days=2, hours=23))
    _post(
        tenant,
        "escalation:1",
        day + timedelta(days=3, hours=11),
        LinePushItem.Status.WAITING_APPROVAL,
        "配信エラー",
    )
    _scheduled(tenant, "ACME-16", "冬季営業時間のお知らせ", "instagram", day + timedelta(days=4, hours=18))
    _scheduled(tenant, "ACME-17", "新曲ティザー", "tiktok", day + timedelta(days=5, hours=10))
    _post(tenant, "reminder:2", day + timedelta(days=6, hours=9), LinePushItem.Status.PENDING, "来週の予定")
    ahead = min(timezone.now() + timedelta(hours=1), day + timedelta(days=6, hours=23, minutes=30))
    _task(tenant, "ACME-18", "年末のご挨拶", "line", publish_at=ahead, status_name="処理中")
    LineSource.objects.create(tenant=other, group_id=GROUP, name="他社のグループ")
    _post(other, "reminder:9", day + timedelta(days=2, hours=12), LinePushItem.Status.PENDING, "他社の連絡")
    return day


def test_it_draws_the_week_and_month_in_chromium(page: Page, live_server, week, tenant):
    manager = member("yamada", tenant, TenantMembership.Role.MANAGER)
    manager.set_password(PASSWORD)
    manager.save()

    log_in(page, live_server, "yamada")
    page.click("#calendar-link")
    grid = page.locator("#calendar-grid")
    expect(page.locator("#cal-today-mark")).to_be_visible()
    wednesday = f"{(week + timedelta(days=2)).date():%Y-%m-%d}"
    late = grid.locator(f"td[data-date='{wednesday}'][data-hour='23'] .am-cal-entry")
    expect(late).to_contain_text("ACME-15")
    expect(late).to_have_class("am-cal-entry am-ch-line am-st-scheduled am-cal-in-quiet")
    expect(grid.locator(".am-ch-tiktok.am-st-failed")).to_contain_text("ACME-13")
    expect(grid.locator(".am-ch-line_group.am-st-waiting")).to_contain_text("タレント連絡グループ")
    expect(grid.locator(f"td[data-date='{wednesday}'][data-hour='3'] .am-cal-shade")).to_be_visible()
    expect(page.locator("#calendar")).not_to_contain_text("他社")
    expect(page.locator("#calendar-legend")).to_contain_text("LINE グループ投稿")
    page.click("#toggle-nav-sidebar")  # room for the seven days in the screenshot
    shoot(page, "calendar")

    page.click("#cal-month")
    expect(page.locator("#cal-today-mark")).to_be_visible()
    expect(page.locator("#calendar-grid .am-cal-entry", has_text="ACME-16")).to_be_visible()
    shoot(page, "calendar-month")

    page.click("#calendar-grid .am-cal-entry >> text=ACME-14")
    expect(page.locator("#content")).to_contain_text("会員向けニュースレター")

"""The 配信カレンダー in Chromium: a week of every channel and state, today marked, quiet hours
shaded, another tenant's posts absent. Takes docs/screenshots/calendar.png and calendar-month.png."""

from __future__ import annotations

from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from console.models import DeliveryOutcome
from core.models import TenantMembership
from core.timeutil import JST
from deliveries.models import STATUS_APPROVED, DeliverySchedule
from linepush.models import LinePushItem, LineSource
from tests.console.test_browser import PASSWORD, browser, log_in, page, shoot  # noqa: F401 - fixtures
from tests.helpers.console import member
from tests.helpers.factories import ContentTaskFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
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


def test_it_draws_the_week_and_month_in_chromium(page: Page, live_server, week, tenant):  # noqa: F811
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

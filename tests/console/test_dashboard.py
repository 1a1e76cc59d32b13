"""The admin index: today's deliveries, 7 days of outcomes, heartbeat and lateness, leaks, LINE quota."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from console.dashboard import Chart, Series
from console.models import DeliveryOutcome, ScanRun
from core.timeutil import JST
from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule, SchedulerHeartbeat
from deliveries.tasks import scan_daily
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from linepush.models import LinePushItem
from tests.helpers.factories import ContentTaskFactory

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
Kind = DeliveryOutcome.Kind


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


def schedule(tenant, key: str, due: datetime) -> DeliverySchedule:
    task = ContentTaskFactory(tenant=tenant, issue_key=key, summary=f"{key} の告知")
    return DeliverySchedule.objects.create(
        tenant=tenant, task=task, name=f"automedia-deliver-{tenant.slug}-{key}", due_at=due, reason="approval"
    )


def page(client) -> str:
    return client.get(reverse("admin:index")).content.decode()


def figure(html: str, card: str) -> str:
    return re.search(rf'id="{card}">([^<]*)<', html).group(1).strip()


def test_it_shows_todays_deliveries_by_hour_and_what_comes_next(as_manager, tenant, other):
    schedule(tenant, "ACME-1", NOW + timedelta(hours=1))
    schedule(tenant, "ACME-2", NOW + timedelta(hours=6))
    schedule(tenant, "ACME-3", NOW + timedelta(days=3))
    schedule(other, "OTHER-1", NOW + timedelta(hours=2))

    html = page(as_manager)

    assert figure(html, "card-today") == "2"
    assert "今日 10:00" not in html  # bars carry their hour in a tooltip instead
    assert "<title>10 予約: 1</title>" in html and "<title>15 予約: 1</title>" in html
    assert "ACME-3" in html and "OTHER-1" not in html


def test_it_charts_the_outcomes_of_the_last_seven_days(as_manager, tenant, other):
    mine, theirs = ContentTaskFactory(tenant=tenant), ContentTaskFactory(tenant=other)
    for days_ago, kind, task in [
        (0, Kind.SENT, mine),
        (0, Kind.SENT, mine),
        (2, Kind.FAILED, mine),
        (1, Kind.SENT, theirs),
        (9, Kind.SKIPPED, mine),
    ]:
        with time_machine.travel(NOW - timedelta(days=days_ago), tick=False):
            DeliveryOutcome.objects.create(tenant=task.tenant, task=task, kind=kind)

    html = page(as_manager)

    assert "<title>12/1 送信済み: 2</title>" in html
    assert "<title>11/29 失敗: 1</title>" in html
    assert "<title>11/30 送信済み" not in html  # the other tenant's
    assert "11/22" not in html  # older than 7 days


def test_it_charts_line_group_posts(as_manager, tenant):
    for n, status in enumerate(["sent", "sent", "failed", "skipped"]):
        LinePushItem.objects.create(
            tenant=tenant,
            ext_group_id="C1",
            trigger_type="reminder",
            payload=[],
            dedupe_key=f"k{n}",
            scheduled_at=NOW,
            status=status,
            sent_at=NOW if status == "sent" else None,
        )

    html = page(as_manager)

    assert "<title>12/1 送信済み: 2</title>" in html and "<title>12/1 スキップ: 1</title>" in html


def test_it_shows_the_scheduler_heartbeat(as_manager, tenant):
    SchedulerHeartbeat.objects.create(name="host-a:1", last_beat=NOW - timedelta(seconds=2))

    assert figure(page(as_manager), "card-scheduler") == "稼働中"


def test_it_names_the_schedulers_processes_to_superusers_only(client, superuser, as_manager, tenant):
    SchedulerHeartbeat.objects.create(name="host-a:1", last_beat=NOW - timedelta(seconds=2))
    managers = page(as_manager)
    client.force_login(superuser)

    assert "配信の処理 1" in managers and "host-a:1" not in managers
    assert "host-a:1" in page(client)


def test_it_warns_when_the_scheduler_stopped(as_manager, tenant):
    SchedulerHeartbeat.objects.create(name="host-a:1", last_beat=NOW - timedelta(minutes=5))

    assert figure(page(as_manager), "card-scheduler") == "停止の疑い"


def test_it_shows_lateness_p99_of_the_last_hour(as_manager, tenant, other):
    task = ContentTaskFactory(tenant=tenant, delivered_at=NOW - timedelta(minutes=5))
    for n in range(1, 101):
        attempt(task, lateness_ms=n * 10, seq=n)  # 100 deliveries of one task (one per approval)
    attempt(ContentTaskFactory(tenant=other), lateness_ms=99_999)
    with time_machine.travel(NOW - timedelta(hours=2), tick=False):
        attempt(task, lateness_ms=88_888, seq=200)

    html = page(as_manager)

    assert figure(html, "card-lateness") == "990 ms"
    assert "（遅れを測った LINE の配信 100 件: p99 990 ms / 最大 1000 ms）" in html


def test_it_counts_every_delivery_of_the_last_hour_once(as_manager, tenant, other):
    """Three deliveries (LINE, Instagram, TikTok; LINE's first try retried) are three, not one."""
    line, instagram, tiktok = (
        ContentTaskFactory(tenant=tenant, channel=c, delivered_at=NOW - timedelta(minutes=m))
        for c, m in (("line", 5), ("instagram", 10), ("tiktok", 20))
    )
    ContentTaskFactory(tenant=tenant, channel="line", delivered_at=NOW - timedelta(hours=2))
    ContentTaskFactory(tenant=other, channel="line", delivered_at=NOW - timedelta(minutes=1))
    attempt(line, lateness_ms=120)
    attempt(line, lateness_ms=90_000)  # its retry: the same delivery, measured at its first try
    for task in (instagram, tiktok):
        DeliveryAttempt.objects.create(
            tenant=tenant,
            task=task,
            approval_seq=1,
            channel=task.channel,
            endpoint="/publish",
            outcome="sent",
        )

    html = page(as_manager)

    delivered = ContentTask.objects.filter(tenant=tenant, delivered_at__gte=NOW - timedelta(hours=1))
    assert delivered.count() == 3
    assert "直近 1 時間の配信 3 件（遅れを測った LINE の配信 1 件: p99 120 ms / 最大 120 ms）" in html


def attempt(task, *, lateness_ms: int, seq: int = 1) -> DeliveryAttempt:
    return DeliveryAttempt.objects.create(
        tenant=task.tenant,
        task=task,
        approval_seq=seq,
        channel="line",
        endpoint="/v2/bot/message/multicast",
        request_summary={"kind": "multicast", "recipients": 3, "lateness_ms": lateness_ms},
        outcome="sent",
    )


def test_it_shows_the_leaks_the_last_scan_found(as_manager, fake_backlog, tenant, other):
    fake_backlog.create_issue("ACME", summary="取りこぼし", description="", status="automedia承認")
    fake_backlog.create_issue("OTHER", summary="他社の取りこぼし", description="", status="automedia承認")

    scan_daily()

    html = page(as_manager)
    assert ScanRun.objects.get().totals["leaks"] == 2
    assert figure(html, "card-leaks") == "1"  # only the manager's own tenant
    assert "ACME-1" in html and "OTHER-1" not in html


def test_it_shows_the_line_quota_used_this_month(as_manager, tenant, other):
    plan = LinePlan.objects.create(code="test-200", name="テスト", monthly_messages=200)
    LinePushSettings.objects.create(tenant=tenant, plan=plan)
    LineMonthlyUsage.objects.create(tenant=tenant, month="2026-12", messages=170)
    LineMonthlyUsage.objects.create(tenant=tenant, month="2026-11", messages=999)

    html = page(as_manager)

    assert "170 / 200" in html and "85%" in html and 'class="am-meter am-high"' in html
    assert "他社事務所" not in html


def test_it_says_which_part_of_the_figure_is_lines_count_and_which_automedias(as_manager, tenant):
    """LINE counted 9 at 08:30; automedia posted 6 since: 15 now, and the page says how."""
    LinePushSettings.objects.create(tenant=tenant)
    LineMonthlyUsage.objects.create(
        tenant=tenant,
        month="2026-12",
        messages=15,
        line_total_usage=9,
        line_limit=200,
        checked_at=NOW - timedelta(minutes=30),
    )

    html = page(as_manager)

    assert "今月 15 / 200 通" in html
    assert "LINE の集計: 9 通（12/1 08:30 に LINE から取得）" in html
    assert "その後の automedia の送信: 6 通（automedia の記録）" in html


def test_it_says_when_line_was_never_asked(as_manager, tenant):
    LineMonthlyUsage.objects.create(tenant=tenant, month="2026-12", messages=4)

    html = page(as_manager)

    assert "LINE の集計: まだ取得していません" in html and "その後の automedia の送信: 4 通" in html


def test_it_counts_waiting_push_approvals(as_manager, tenant, other):
    for t in (tenant, other):
        LinePushItem.objects.create(
            tenant=t,
            ext_group_id="C1",
            trigger_type="escalation",
            payload=[],
            dedupe_key=f"w-{t.slug}",
            scheduled_at=NOW,
            status=LinePushItem.Status.WAITING_APPROVAL,
        )

    assert figure(page(as_manager), "card-waiting") == "1"


def test_it_keeps_the_app_list_below_the_dashboard(as_manager, tenant):
    html = page(as_manager)

    assert html.index('id="dashboard"') < html.index("コンテンツ課題")


def test_it_stacks_bars_to_scale():
    chart = Chart(
        labels=["a", "b"],
        series=[Series("sent", "送信", [2, 4]), Series("failed", "失敗", [2, 0])],
        height=122,
        top=0,
        bottom=22,
    )

    heights = [round(b.height) for b in chart.bars]
    assert heights == [50, 50, 100]  # a: 2 + 2 stacked, b: 4 = the peak fills the plot
    assert chart.bars[1].y + chart.bars[1].height == pytest.approx(chart.bars[0].y)


def _failed(task, days_ago: float = 0, error: str = "") -> DeliveryOutcome:
    if error:
        DeliveryAttempt.objects.create(
            tenant=task.tenant,
            task=task,
            approval_seq=1,
            channel="line",
            endpoint="/v2/bot/message/multicast",
            outcome="failed",
            status_code=400,
            error=error,
        )
    with time_machine.travel(NOW - timedelta(days=days_ago), tick=False):
        return DeliveryOutcome.objects.create(
            tenant=task.tenant, task=task, kind=Kind.FAILED, detail="failed"
        )


def test_it_lists_the_failed_deliveries_of_the_last_seven_days_linked_to_their_tasks(
    as_manager, tenant, other
):
    recent = ContentTaskFactory(tenant=tenant, issue_key="ACME-7", summary="年末告知")
    _failed(recent, days_ago=1, error="リクエスト内容が不正です（400）: messages[0].text")
    _failed(ContentTaskFactory(tenant=tenant, issue_key="ACME-8"), days_ago=8)
    _failed(ContentTaskFactory(tenant=other, issue_key="OTHER-9"), days_ago=1)
    ContentTaskFactory(tenant=tenant, issue_key="ACME-10")  # sent, not failed
    DeliveryOutcome.objects.create(
        tenant=tenant, task=ContentTask.objects.get(issue_key="ACME-10"), kind=Kind.SENT
    )

    html = page(as_manager)

    section = html[html.index('id="failures"') : html.index('id="push-outcomes"')]
    link = reverse("admin:deliveries_contenttask_change", args=[recent.pk])
    assert f'<a href="{link}">ACME-7</a> 年末告知' in section
    assert "リクエスト内容が不正です（400）: messages[0].text" in section
    assert "ACME-8" not in section and "OTHER-9" not in section and "ACME-10" not in section


def test_the_failure_list_takes_the_same_queries_for_one_failure_or_many(as_manager, tenant):
    _failed(ContentTaskFactory(tenant=tenant), error="x")
    with CaptureQueriesContext(connection) as one:
        page(as_manager)
    for _ in range(5):
        _failed(ContentTaskFactory(tenant=tenant), error="y")
    with CaptureQueriesContext(connection) as six:
        html = page(as_manager)

    assert len(six) == len(one)
    assert html.count("deliveries/contenttask/") >= 6


def test_a_viewer_sees_the_attention_rows_without_their_actions(client, viewer, as_manager, tenant):
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-7", status_name="automediaエラー")

    assert 'data-action="retry"' in page(as_manager)
    client.force_login(viewer)
    html = page(client)

    assert "ACME-7" in html and f"/view/{task.issue_key}" in html
    assert 'data-action="retry"' not in html


def test_a_row_action_on_another_tenants_task_does_nothing(client, other_manager, tenant, fake_backlog):
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-8", status_name="automediaエラー")
    client.force_login(other_manager)

    response = client.post(
        reverse("admin:deliveries_contenttask_changelist"),
        {"action": "retry_selected", "_selected_action": [task.pk], "confirm": "yes", "next": "/admin/"},
        follow=True,
    )

    assert "再試行しました" not in response.content.decode()
    assert not DeliverySchedule.objects.filter(task=task).exists()


def test_a_row_action_goes_back_only_to_this_site(as_manager, tenant, fake_backlog):
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-9", status_name="automediaエラー")

    response = as_manager.post(
        reverse("admin:deliveries_contenttask_changelist"),
        {"action": "retry_selected", "_selected_action": [task.pk], "next": "https://evil.example/"},
    )

    assert response.status_code == 200 and b"evil.example" not in response.content

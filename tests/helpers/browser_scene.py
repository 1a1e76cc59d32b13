"""The browser tests' scene: two tenants, one with tasks, a waiting post, a group and a
week of history (tests/console/conftest.py's `scene` fixture)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from console.models import DeliveryOutcome, ScanRun
from core.timeutil import JST
from deliveries.models import (
    STATUS_APPROVED,
    STATUS_DELIVERED,
    DeliveryAttempt,
    DeliverySchedule,
    SchedulerHeartbeat,
)
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings, LineSource
from linepush.models import LinePushItem
from tests.helpers.backlog import body
from tests.helpers.browser import BANNER_URL
from tests.helpers.console import mirrored_issue
from tests.helpers.factories import ContentTaskFactory


def build_scene(fake_backlog, pump, tenant, other, line) -> dict:
    """Two tenants: acme (with tasks, a waiting post, a group and a week of history) and other."""
    tenant.name = "エーシーエム事務所"
    tenant.save()
    line.set_quota(type="limited", value=200, total_usage=120)  # the preview's approval checks ask it
    due = (timezone.now() + timedelta(days=2)).astimezone(JST).replace(hour=10, minute=0, second=0)
    banner = f"\n## 添付\n- 画像: {BANNER_URL}\n"
    task = mirrored_issue(
        fake_backlog,
        pump,
        tenant,
        summary="冬季営業時間のお知らせ",
        description=body(when=f"{due:%Y-%m-%d %H:%M}") + banner,
    )
    mirrored_issue(fake_backlog, pump, tenant, summary="新商品の告知", status=STATUS_APPROVED)
    mirrored_issue(fake_backlog, pump, tenant, summary="年始のご挨拶", status="automediaエラー")
    ContentTaskFactory(tenant=other, issue_key="OTHER-1", summary="他社の秘密の告知")
    _history(tenant)
    group = LineSource.objects.create(tenant=tenant, group_id="C" + "a" * 32, name="タレント連絡グループ")
    LineSource.objects.create(tenant=other, group_id="C" + "b" * 32, name="他社のグループ")
    waiting = [
        _waiting(t, text)
        for t, text in ((tenant, "ACME-3 が配信エラーのままです"), (other, "他社の承認待ち"))
    ]
    return {"task": task, "group": group, "waiting": waiting[0]}


def _history(tenant) -> None:
    """A week of outcomes, today's schedules, a live scheduler and a LINE plan: a dashboard worth a look."""
    now = timezone.now()
    tasks = [
        ContentTaskFactory(
            tenant=tenant,
            issue_key=f"ACME-{100 + n}",
            summary=f"過去の配信 {n}",
            channel="line",
            status_name=STATUS_DELIVERED,
            delivered_at=now - timedelta(days=n + 1),
        )
        for n in range(4)
    ]
    for day in range(7):
        for n, kind in enumerate(["sent", "sent", "sent", "failed", "skipped"][: 2 + day % 4]):
            row = DeliveryOutcome.objects.create(tenant=tenant, task=tasks[n % 4], kind=kind)
            DeliveryOutcome.objects.filter(pk=row.pk).update(created_at=now - timedelta(days=day, hours=n))
    for n, hour in enumerate((11, 15, 18)):
        due = now.astimezone(JST).replace(hour=hour, minute=0) + timedelta(
            days=0 if now.astimezone(JST).hour < hour else 1
        )
        task = ContentTaskFactory(
            tenant=tenant,
            issue_key=f"ACME-{200 + n}",
            summary=f"本日の配信 {n}",
            channel="line",
            publish_at=due,
            status_name=STATUS_APPROVED,
        )
        DeliverySchedule.objects.create(
            tenant=tenant, task=task, name=f"s-{n}", due_at=due, reason="approval"
        )
    SchedulerHeartbeat.objects.create(name="web-1:scheduler", last_beat=now)
    for n, lateness in enumerate((120, 180, 240, 310, 650)):
        DeliveryAttempt.objects.create(
            tenant=tenant,
            task=tasks[n % 4],
            approval_seq=1,
            channel="line",
            endpoint="/v2/bot/message/multicast",
            request_summary={"recipients": 3, "lateness_ms": lateness},
            outcome="sent",
            status_code=200,
        )
    ScanRun.objects.create(totals={"leaks": 0}, results=[{"tenant": tenant.slug, "leaks": [], "rescued": 0}])
    for n in range(12):
        status = "failed" if n % 5 == 4 else "sent"
        row = LinePushItem.objects.create(
            tenant=tenant,
            ext_group_id="C" + "a" * 32,
            trigger_type="reminder",
            payload=[],
            dedupe_key=f"reminder:acme:{n}",
            scheduled_at=now,
            status=status,
            sent_at=now if status == "sent" else None,
        )
        LinePushItem.objects.filter(pk=row.pk).update(
            sent_at=now - timedelta(days=n % 7) if status == "sent" else None,
            updated_at=now - timedelta(days=n % 7),
        )
    # The plans are data of a migration, gone after an earlier test flushed the database.
    plan = LinePlan.objects.filter(monthly_messages__gt=0).order_by("monthly_messages").first()
    plan = plan or LinePlan.objects.create(
        code="communication", name="コミュニケーションプラン", monthly_messages=200
    )
    LinePushSettings.objects.create(tenant=tenant, plan=plan)
    # the approvals above stored LINE's count already (the forecast asks LINE): this month's 120
    LineMonthlyUsage.objects.update_or_create(
        tenant=tenant, month=f"{now.astimezone(JST):%Y-%m}", defaults={"messages": 120}
    )


def _waiting(tenant, text: str) -> LinePushItem:
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="C" + ("a" if tenant.slug == "acme" else "b") * 32,
        trigger_type="escalation",
        payload=[{"type": "text", "text": text}],
        dedupe_key=f"escalation:{tenant.slug}:1",
        scheduled_at=timezone.now(),
        status=LinePushItem.Status.WAITING_APPROVAL,
    )

"""The LINE quota forecast of a delivery at approval (deliveries/quota_forecast.py asks it).

The month's use is LINE's own count plus what automedia has scheduled and not sent yet;
the allowance is the tenant's plan, capped by LINE's target limit. A tenant without a plan
is counted against LINE's answer alone: no plan is assumed.
Counting rules: https://developers.line.biz/en/docs/messaging-api/pricing/.
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal

from core.models import Tenant
from core.transport import TransportError
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.quota_forecast import (
    Forecast,
    Plan,
    line_usage_keep,
    line_usage_recall,
)
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings, LineSource
from line.transport import LineTransport, line_transport
from linepush.models import LinePushItem
from linepush.services import month_of
from linepush.usage import usage_observe, zone_of

logger = logging.getLogger(__name__)


def approval_forecast(
    *, tenant: Tenant, plan: Plan, due_at: datetime, now: datetime, task: ContentTask | None
) -> Forecast:
    # Read, never created: a preview must not write the tenant's settings.
    push = LinePushSettings.objects.select_related("plan").filter(tenant=tenant).first()
    line_plan = push.plan if push is not None else None
    zone = zone_of(push)
    transport = line_transport(tenant.line_channel_token)
    start, end = _month_bounds(due_at, zone)
    month = month_of(due_at, zone)
    notes: list[str] = []
    messages = sum(_cost(tenant, transport, kind, to, notes) for kind, to in plan)
    this_month = month == month_of(now, zone)
    line_used, line_limit = _line_usage(tenant, transport, month, this_month, notes)
    if line_plan is None:
        notes.insert(0, _without_plan(line_limit, this_month))
    return Forecast(
        messages=messages,
        line_used=line_used,
        pending=_pending_deliveries(tenant, start, end, task) + _pending_posts(tenant, start, end),
        allowance=line_plan.monthly_messages if line_plan else None,
        plan_name=line_plan.name if line_plan else "",
        extra_price_yen=_extra_price(line_plan),
        line_limit=line_limit,
        month=month,
        this_month=this_month,
        note="、".join(dict.fromkeys(notes)),
    )


def _without_plan(line_limit: int | None, this_month: bool) -> str:
    """What a forecast without a plan counts against: LINE's limit, or no cap at all."""
    if line_limit is not None:
        return f"プラン未設定のため LINE の上限 {line_limit:,} 通で判定"
    if this_month:
        return "プラン未設定で LINE も上限を示していないため通数では判定しない"
    return "プラン未設定のため通数では判定しない（LINE の上限は送信月に確認）"


def _extra_price(line_plan: LinePlan | None) -> Decimal | None:
    if line_plan is None or not line_plan.additional_messages:
        return None
    return line_plan.extra_message_price_yen or Decimal(0)


def _month_bounds(when: datetime, zone) -> tuple[datetime, datetime]:
    start = when.astimezone(zone).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, following


def _cost(tenant: Tenant, transport: LineTransport, kind: str, to, notes: list[str]) -> int:
    """A multicast costs its user ids; a push to a group its members (the bot excluded)."""
    if kind != "push":
        return len(to)
    if not str(to).startswith(("C", "R")):
        return 1  # a user id
    try:
        return max(1, transport.member_count(to, room=str(to).startswith("R")))
    except TransportError as exc:
        logger.warning("member count of %s (%s) failed: %s", to, tenant.slug, exc.message)
    group = LineSource.objects.filter(tenant=tenant, group_id=to).first()
    notes.append("グループのメンバー数は LINE に確認できず、記録済みの数（不明なら 1 人）で計算")
    return group.cost if group is not None else 1


def _line_usage(
    tenant: Tenant, transport: LineTransport, month: str, this_month: bool, notes: list[str]
) -> tuple[int, int | None]:
    """LINE's count and target limit of the send's month: asked now for this month, the
    last daily check's when LINE cannot answer; a later month has used nothing yet."""
    if not this_month:
        return 0, None
    if (known := line_usage_recall((tenant.pk, month))) is not None:
        return known  # the scan's rescues: asked once a minute (deliveries.quota_forecast)
    try:
        quota, used = transport.quota(), int(transport.consumption().get("totalUsage") or 0)
        usage = used, quota.get("value") if quota.get("type") == "limited" else None
        line_usage_keep((tenant.pk, month), usage)
        usage_observe(tenant=tenant, month=month, used=usage[0], line_limit=usage[1])
        return usage
    except TransportError as exc:
        logger.warning("LINE quota of %s could not be read: %s", tenant.slug, exc.message)
    stored = LineMonthlyUsage.objects.filter(tenant=tenant, month=month).first()
    notes.append("今月の使用数は LINE に確認できず、前回の記録で計算")
    if stored is None:
        return 0, None
    return stored.messages, stored.line_limit


def _pending_deliveries(tenant: Tenant, start: datetime, end: datetime, task: ContentTask | None) -> int:
    schedules = DeliverySchedule.objects.filter(
        tenant=tenant, stage=DeliverySchedule.Stage.DELIVER, due_at__gte=start, due_at__lt=end
    )
    if task is not None:
        schedules = schedules.exclude(task=task)
    checks = schedules.values_list("task__approval_checks", flat=True)
    return sum(int((c or {}).get("line_messages") or 0) for c in checks)


def _pending_posts(tenant: Tenant, start: datetime, end: datetime) -> int:
    items = LinePushItem.objects.filter(
        tenant=tenant, status__in=LinePushItem.OPEN, scheduled_at__gte=start, scheduled_at__lt=end
    ).values_list("ext_group_id", flat=True)
    groups = list(items)
    costs = {g.group_id: g.cost for g in LineSource.objects.filter(tenant=tenant, group_id__in=set(groups))}
    return sum(costs.get(group, 1) for group in groups)

"""The LINE quota forecast of one send, as the approval-time checks state it.

LINE counts one message per recipient, not per message object: a push to a group costs
its member count, a multicast or a narrowcast its number of user ids
(https://developers.line.biz/en/docs/messaging-api/pricing/). The month's use is LINE's
own count plus what automedia has scheduled in that month and not sent yet: the caller's
sends and those of the senders registered here (linepush's group posts); the allowance is
the tenant's plan, capped by LINE's target limit. A tenant without a plan is counted
against LINE's answer alone: no plan is assumed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from core.models import Tenant
from core.transport import TransportError
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings, LineSource
from line.transport import LineTransport, line_transport
from line.usage import month_of, month_read, usage_observe, zone_of

logger = logging.getLogger(__name__)

# [("push", groupId) | ("multicast", [userId …]) | ("narrowcast", [userId …])], as a publisher sends
Plan = list[tuple[str, object]]


@dataclass(frozen=True)
class Forecast:
    messages: int  # what this send uses
    line_used: int  # LINE's count of the month so far (or the last one stored, see `note`)
    pending: int  # scheduled by automedia in that month and not sent yet (deliveries, group posts)
    allowance: int | None  # the plan's messages per month; None = no plan (LINE's limit alone)
    plan_name: str
    extra_price_yen: Decimal | None  # per extra message; None = the plan allows no extra messages
    line_limit: int | None = None  # LINE's own target limit for the month (quota), None = none
    month: str = ""  # YYYY-MM of the send
    this_month: bool = True  # the send is due in the current month (else LINE's count is 0 so far)
    note: str = ""  # where a number is not LINE's answer of now

    @property
    def used(self) -> int:
        return self.line_used + self.pending

    @property
    def after(self) -> int:
        return self.used + self.messages

    @property
    def overage(self) -> int:
        """Messages of this send beyond the plan's allowance."""
        if self.allowance is None:
            return 0
        return max(0, self.after - self.allowance) - max(0, self.used - self.allowance)

    @property
    def overage_cost_yen(self) -> Decimal:
        return (self.extra_price_yen or Decimal(0)) * self.overage

    def problem(self) -> str:
        """Why the send must not be scheduled; empty when it may."""
        used_in = "今月の使用" if self.this_month else f"{self.month} の使用"
        count = (
            f"この配信 {self.messages:,} 通 + {used_in} {self.used:,} 通"
            f"（LINE の集計 {self.line_used:,}、予約済みで未送信 {self.pending:,}）= {self.after:,} 通"
        )
        if self.line_limit is not None and self.after > self.line_limit:
            return f"LINE の今月の送信上限 {self.line_limit:,} 通を超えます: {count}。"
        if self.overage and self.extra_price_yen is None:
            return (
                f"{self.plan_name}の月間メッセージ数 {self.allowance:,} 通を超えます: {count}。"
                f"{self.plan_name}では追加メッセージを送れません（プランを変更するか、対象を減らしてください）。"
            )
        return ""

    @property
    def limit(self) -> int | None:
        """The month's limit: the lower of the plan's allowance and LINE's own limit; None = no cap
        (no plan, and LINE states no limit)."""
        limits = [n for n in (self.allowance, self.line_limit) if n is not None]
        return min(limits) if limits else None

    def line(self) -> str:
        """`クォータ見込み: 3 通（今月 182 / 200）`: this send, then the month's use as the
        dashboard shows it (LINE's count / the limit) and what is scheduled and not sent yet;
        the overage with its cost when there is one."""
        month = "今月" if self.this_month else self.month
        pending = f"、予約済みで未送信 {self.pending:,} 通" if self.pending else ""
        text = f"クォータ見込み: {self.messages:,} 通（{month} {self.line_used:,} / {self._cap()}{pending}）"
        if self.overage and self.extra_price_yen is not None:
            text += (
                f" 超過見込み {self.overage:,} 通、追加料金 最大 ¥{self.overage_cost_yen:,.0f}"
                f"（{self.plan_name}: 追加メッセージ 1 通あたり最大 ¥{self.extra_price_yen:,.0f}）"
            )
        return text + (f"（{self.note}）" if self.note else "")

    def _cap(self) -> str:
        if self.limit is None:
            return "上限なし"
        return f"{self.limit:,}" if self.allowance is not None else f"LINE の上限 {self.limit:,}"


class PendingCount(Protocol):
    def __call__(self, *, tenant: Tenant, start: datetime, end: datetime) -> int:
        """Messages the sender has scheduled in [start, end) and not sent yet."""


# Apps above line that send LINE messages of their own plug in what they have scheduled
# (linepush: the group posts); the caller of a forecast counts its own sends.
PENDING_SENDERS: list[PendingCount] = []


def pending_sender_register(count: PendingCount) -> None:
    if count not in PENDING_SENDERS:  # ready() may run more than once in tests
        PENDING_SENDERS.append(count)


def line_forecast(
    *,
    tenant: Tenant,
    plan: Plan,
    due_at: datetime,
    now: datetime,
    pending: Callable[[datetime, datetime], int],
) -> Forecast:
    """The forecast of sending to `plan` at `due_at`; `pending(start, end)` is what the caller
    has scheduled in the month [start, end) and not sent yet, its own send left out."""
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
        pending=pending(start, end) + _others_pending(tenant, start, end),
        allowance=line_plan.monthly_messages if line_plan else None,
        plan_name=line_plan.name if line_plan else "",
        extra_price_yen=_extra_price(line_plan),
        line_limit=line_limit,
        month=month,
        this_month=this_month,
        note="、".join(dict.fromkeys(notes)),
    )


def _others_pending(tenant: Tenant, start: datetime, end: datetime) -> int:
    return sum(count(tenant=tenant, start=start, end=end) for count in PENDING_SENDERS)


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
        return known  # the scan's rescues: asked once a minute (line_usage_shared)
    try:
        usage = month_read(transport)
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


# -- LINE's count, asked once per run of many approvals ---------------------------------------

USAGE_REUSE_SECONDS = 60.0
_usage_memo: ContextVar[dict | None] = ContextVar("line_usage_memo", default=None)


@contextmanager
def line_usage_shared() -> Iterator[None]:
    """Within it, the forecasts ask LINE for a month's count (quota, consumption) once a
    minute per tenant and reuse the answer: the scan's thousands of rescues would otherwise
    ask LINE twice each. What automedia has scheduled and not sent is still counted live per
    approval, so each rescue counts the ones before it; a single approval outside this asks
    LINE every time, as before."""
    token = _usage_memo.set({})
    try:
        yield
    finally:
        _usage_memo.reset(token)


def line_usage_recall(key: tuple) -> object | None:
    memo = _usage_memo.get()
    if memo is None or key not in memo:
        return None
    at, value = memo[key]
    return value if time.monotonic() - at < USAGE_REUSE_SECONDS else None


def line_usage_keep(key: tuple, value: object) -> None:
    memo = _usage_memo.get()
    if memo is not None:
        memo[key] = (time.monotonic(), value)

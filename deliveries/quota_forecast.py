"""The LINE quota forecast of one send, as the approval-time checks state it.

LINE counts one message per recipient, not per message object: a push to a group costs
its member count, a multicast or a narrowcast its number of user ids
(https://developers.line.biz/en/docs/messaging-api/pricing/). The numbers come from
linepush (plans, the month's usage, group sizes), which registers its forecaster here in
its AppConfig.ready: deliveries imports nothing of linepush.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from core.models import Tenant
from deliveries.models import ContentTask

# [("push", groupId) | ("multicast", [userId …]) | ("narrowcast", [userId …])], as the publisher sends
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


class ForecastUnavailable(Exception):
    """The forecast cannot be made; the reason is said, nothing refused."""


class QuotaForecaster(Protocol):
    def __call__(
        self, *, tenant: Tenant, plan: Plan, due_at: datetime, now: datetime, task: ContentTask | None
    ) -> Forecast:
        """The forecast of sending to `plan` at `due_at` (`task`'s own schedule is not counted
        twice); ForecastUnavailable when it cannot be made."""


QUOTA_FORECASTERS: list[QuotaForecaster] = []


def quota_forecaster_register(forecaster: QuotaForecaster) -> None:
    if forecaster not in QUOTA_FORECASTERS:  # ready() may run more than once in tests
        QUOTA_FORECASTERS.append(forecaster)


def quota_forecast(
    *, tenant: Tenant, plan: Plan, due_at: datetime, now: datetime, task: ContentTask | None
) -> Forecast | None:
    """The registered forecaster's answer; None when no app registered one."""
    for forecaster in QUOTA_FORECASTERS:
        return forecaster(tenant=tenant, plan=plan, due_at=due_at, now=now, task=task)
    return None


# -- LINE's count, asked once per run of many approvals ---------------------------------------

USAGE_REUSE_SECONDS = 60.0
_usage_memo: ContextVar[dict | None] = ContextVar("line_usage_memo", default=None)


@contextmanager
def line_usage_shared() -> Iterator[None]:
    """Within it, the forecasters ask LINE for a month's count (quota, consumption) once a
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

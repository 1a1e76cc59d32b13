"""The month's LINE message use of a tenant: one figure for the dashboard, the settings and
the approval comment, and the daily check that reads LINE's own count.

`used`: the tenant's `LineMonthlyUsage` row of the month, LINE's own count whenever
automedia asks LINE (`line_used`, read at `checked_at`) plus automedia's group posts since
(`since_check`): the screens show the two parts and when LINE's was read. `limit`: the lower of the plan's
monthly messages and LINE's target limit (no plan: LINE's limit alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.utils import timezone
from django.utils.translation import gettext as _

from core.models import Tenant
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from line.transport import LineTransport, line_transport


@dataclass(frozen=True)
class LineUsage:
    month: str
    used: int
    limit: int | None
    plan: LinePlan | None  # the tenant's plan; None = counted against LINE's limit alone
    checked_at: datetime | None  # when LINE last gave its count
    line_used: int | None = None  # LINE's own count as read at checked_at; None = never read

    @property
    def since_check(self) -> int:
        """What automedia counted itself since LINE's count was read (all of `used` if never)."""
        return max(0, self.used - (self.line_used or 0))

    @property
    def line_used_text(self) -> str:
        return f"{self.line_used:,}" if self.line_used is not None else ""

    @property
    def since_check_text(self) -> str:
        return f"{self.since_check:,}"

    @property
    def percent(self) -> int | None:
        return min(100, int(100 * self.used / self.limit)) if self.limit else None

    @property
    def plan_label(self) -> str:
        if self.plan is not None:
            return self.plan.name
        return _("プラン未設定（LINE の上限だけで判定）")

    def __str__(self) -> str:
        if not self.limit:
            return _("今月 %(used)s 通（上限なし）") % {"used": f"{self.used:,}"}
        return _("今月 %(used)s / %(limit)s 通") % {"used": f"{self.used:,}", "limit": f"{self.limit:,}"}


def month_of(when: datetime, zone) -> str:
    return when.astimezone(zone).strftime("%Y-%m")


def usage_limit(*, plan: LinePlan | None, line_limit: int | None) -> int | None:
    """The lower of the plan's allowance and LINE's own limit; None = no known limit."""
    limits = [n for n in (line_limit, plan.monthly_messages if plan else None) if n]
    return min(limits) if limits else None


def quota_limit(*, push: LinePushSettings, usage: LineMonthlyUsage) -> int | None:
    """The month's limit of a tenant's settings and usage row."""
    return usage_limit(plan=push.plan, line_limit=usage.line_limit)


def zone_of(push: LinePushSettings | None) -> ZoneInfo:
    return push.zone if push is not None else ZoneInfo(LinePushSettings._meta.get_field("timezone").default)


def line_usages(*, tenants: list[Tenant], now: datetime | None = None) -> dict[int, LineUsage]:
    """Each tenant's figure of this month (a few queries whatever the number of tenants)."""
    now = now or timezone.now()
    pushes = {
        p.tenant_id: p for p in LinePushSettings.objects.select_related("plan").filter(tenant__in=tenants)
    }
    months = {t.pk: month_of(now, zone_of(pushes.get(t.pk))) for t in tenants}
    rows = LineMonthlyUsage.objects.filter(tenant__in=tenants, month__in=set(months.values()))
    stored = {(u.tenant_id, u.month): u for u in rows}
    usages = {}
    for tenant in tenants:
        push, month = pushes.get(tenant.pk), months[tenant.pk]
        row = stored.get((tenant.pk, month)) or LineMonthlyUsage(tenant=tenant, month=month)
        plan = push.plan if push is not None else None
        limit = usage_limit(plan=plan, line_limit=row.line_limit)
        usages[tenant.pk] = LineUsage(
            month, row.messages, limit, plan, row.checked_at, row.line_total_usage if row.checked_at else None
        )
    return usages


def line_usage(*, tenant: Tenant, now: datetime | None = None) -> LineUsage:
    return line_usages(tenants=[tenant], now=now)[tenant.pk]


def usage_observe(*, tenant: Tenant, month: str, used: int, line_limit: int | None) -> LineMonthlyUsage:
    """LINE's count of the month as it answered now: the figure everyone reads from here on."""
    row, _ = LineMonthlyUsage.objects.update_or_create(
        tenant=tenant,
        month=month,
        defaults={
            "messages": used,
            "line_total_usage": used,
            "line_limit": line_limit,
            "checked_at": timezone.now(),
        },
    )
    return row


def month_read(transport: LineTransport) -> tuple[int, int | None]:
    """LINE's count of this month's messages and its target limit (None: LINE states none);
    raises TransportError. messaging-api.yml getMessageQuota, getMessageQuotaConsumption."""
    quota, used = transport.quota(), int(transport.consumption().get("totalUsage") or 0)
    return used, quota.get("value") if quota.get("type") == "limited" else None


def usage_check(*, tenant: Tenant, push: LinePushSettings) -> LineMonthlyUsage:
    """The daily check: LINE's count and limit of this month, read and stored; raises
    TransportError when LINE cannot be asked."""
    month = month_of(timezone.now(), push.zone)
    used, line_limit = month_read(line_transport(tenant.line_channel_token))
    return usage_observe(tenant=tenant, month=month, used=used, line_limit=line_limit)

"""The admin's index page: what goes out today, how the last week went, and whether the engine is healthy.

Every figure is limited to the user's tenants (scheduler heartbeats, which belong to
no tenant, are shown to everyone). Charts are SVG drawn here: the page needs no
JavaScript library and works offline.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import TruncDate, TruncHour
from django.utils.translation import gettext as _

from console.attention import AttentionList, attention_list
from console.models import DeliveryOutcome, PushApproval, ScanRun
from console.outcomes import delivery_endings
from core.access import scope, visible_tenant_ids
from core.models import Tenant
from core.timeutil import JST
from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule, SchedulerHeartbeat
from line.usage import LineUsage, line_usages
from linepush.models import LinePushItem

DAYS = 7
UPCOMING = 10
FAILURES = 20  # the latest failures listed; the chart counts them all
LATENESS_WINDOW = timedelta(hours=1)
WAITING = LinePushItem.Status.WAITING_APPROVAL
COLORS = {"sent": "#2e9e5b", "failed": "#d64545", "skipped": "#9aa5b1", "waiting": "#4a7fd4"}


# -- charts -------------------------------------------------------------------------------


@dataclass
class Series:
    key: str
    label: str
    values: list[int]

    @property
    def color(self) -> str:
        return COLORS[self.key]


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    color: str
    title: str


@dataclass
class Chart:
    """A stacked bar chart as SVG geometry (templates/admin/console/bar_chart.html draws it)."""

    labels: list[str]
    series: list[Series]
    width: int = 560
    height: int = 180
    bars: list[Bar] = field(default_factory=list)
    ticks: list[tuple[float, int]] = field(default_factory=list)  # (y, value)
    label_xs: list[tuple[float, str]] = field(default_factory=list)
    top: int = 8
    left: int = 32
    bottom: int = 22

    def __post_init__(self) -> None:
        totals = [sum(s.values[i] for s in self.series) for i in range(len(self.labels))]
        peak = max([*totals, 1])
        plot_h = self.height - self.top - self.bottom
        slot = (self.width - self.left) / max(len(self.labels), 1)
        for i, label in enumerate(self.labels):
            self._stack(i, label, slot, plot_h, peak)
        step = max(1, math.ceil(peak / 4))
        self.ticks = [(self.top + plot_h * (1 - v / peak), v) for v in range(0, peak + 1, step)]

    def _stack(self, i: int, label: str, slot: float, plot_h: float, peak: int) -> None:
        x, base = self.left + i * slot + slot * 0.15, self.top + plot_h
        if len(self.labels) <= 12 or i % 3 == 0:
            self.label_xs.append((self.left + i * slot + slot / 2, label))
        for s in self.series:
            value = s.values[i]
            if not value:
                continue
            h = plot_h * value / peak
            base -= h
            self.bars.append(Bar(x, base, slot * 0.7, h, s.color, f"{label} {s.label}: {value}"))

    @property
    def empty(self) -> bool:
        return not self.bars


# -- the page ------------------------------------------------------------------------------


@dataclass
class Heartbeat:
    name: str
    last_beat: datetime
    age_seconds: float
    ok: bool


@dataclass
class Lateness:
    delivered: int  # tasks delivered in the window, on every channel
    measured: int  # of them, the deliveries whose lateness was measured (LINE's)
    p99_ms: int | None
    max_ms: int | None


@dataclass
class ScanSummary:
    run: ScanRun
    leaks: int
    rescued: int
    errors: int
    tenants: list[dict]


@dataclass
class Quota:
    tenant: Tenant
    usage: LineUsage


@dataclass
class Dashboard:
    now: datetime
    today: Chart
    upcoming: list[DeliverySchedule]
    deliveries: Chart
    pushes: Chart
    heartbeats: list[Heartbeat]
    lateness: Lateness
    scan: ScanSummary | None
    quotas: list[Quota]
    waiting_approvals: int
    scheduled_today: int
    attention: AttentionList
    failures: list[DeliveryOutcome] = field(default_factory=list)


def dashboard_build(*, user, now: datetime) -> Dashboard:
    local = now.astimezone(JST)
    start_of_day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [(local - timedelta(days=n)).date() for n in range(DAYS - 1, -1, -1)]
    schedules = scope(DeliverySchedule.objects.filter(stage=DeliverySchedule.Stage.DELIVER), user)
    today = _today_chart(user, schedules, start_of_day)
    return Dashboard(
        now=now,
        today=today,
        upcoming=list(schedules.filter(due_at__gte=now).select_related("task", "tenant")[:UPCOMING]),
        deliveries=_delivery_chart(user, days),
        pushes=_push_chart(user, days),
        heartbeats=_heartbeats(now),
        lateness=_lateness(user, now),
        scan=_scan(user),
        quotas=_quotas(user, now),
        waiting_approvals=scope(PushApproval.objects, user).filter(status=WAITING).count(),
        scheduled_today=sum(today.series[0].values),
        attention=attention_list(user=user, now=now),
        failures=_failures(user, now),
    )


def _per_hour(queryset: QuerySet, field_name: str, start: datetime) -> list[int]:
    rows = (
        queryset.filter(**{f"{field_name}__gte": start, f"{field_name}__lt": start + timedelta(days=1)})
        .annotate(hour=TruncHour(field_name, tzinfo=JST))
        .values("hour")
        .annotate(n=Count("id"))
    )
    counts = [0] * 24
    for row in rows:
        counts[row["hour"].astimezone(JST).hour] += row["n"]
    return counts


def _today_chart(user, schedules: QuerySet, start: datetime) -> Chart:
    delivered = scope(ContentTask.objects.all(), user)
    return Chart(
        labels=[f"{h}" for h in range(24)],
        series=[
            Series("waiting", _("予約"), _per_hour(schedules, "due_at", start)),
            Series("sent", _("配信済み"), _per_hour(delivered, "delivered_at", start)),
        ],
    )


def _per_day(queryset: QuerySet, field_name: str, days: list[date], by: str) -> dict[tuple[date, str], int]:
    start = datetime.combine(days[0], datetime.min.time(), tzinfo=JST)
    rows = (
        queryset.filter(**{f"{field_name}__gte": start})
        .annotate(day=TruncDate(field_name, tzinfo=JST))
        .values("day", by)
        .annotate(n=Count("id"))
    )
    return {(row["day"], row[by]): row["n"] for row in rows}


def _outcome_chart(counts: dict[tuple[date, str], int], days: list[date]) -> Chart:
    labels = {"sent": _("送信済み"), "failed": _("失敗"), "skipped": _("スキップ")}
    return Chart(
        labels=[f"{d.month}/{d.day}" for d in days],
        series=[Series(k, label, [counts.get((d, k), 0) for d in days]) for k, label in labels.items()],
    )


def _delivery_chart(user, days: list[date]) -> Chart:
    """Recorded outcomes, and the endings of deliveries older than the records (console.outcomes)."""
    start = datetime.combine(days[0], datetime.min.time(), tzinfo=JST)
    endings = delivery_endings(user=user, since=start)
    return _outcome_chart(Counter((e.at.astimezone(JST).date(), e.kind) for e in endings), days)


def _push_chart(user, days: list[date]) -> Chart:
    items = scope(LinePushItem.objects.all(), user)
    counts = _per_day(items.filter(status="sent"), "sent_at", days, "status")
    counts |= _per_day(items.filter(status__in=["failed", "skipped"]), "updated_at", days, "status")
    return _outcome_chart(counts, days)


def _failures(user, now: datetime) -> list[DeliveryOutcome]:
    """The latest deliveries that ended in automediaエラー in the last 7 days, with the error
    of their last request (none when the run failed before sending: render, quiet hours),
    and the approvals refused (their problems are the outcome's detail)."""
    last_error = DeliveryAttempt.objects.filter(task=OuterRef("task_id")).exclude(error="")
    kinds = (DeliveryOutcome.Kind.FAILED, DeliveryOutcome.Kind.REFUSED)
    outcomes = scope(DeliveryOutcome.objects.filter(kind__in=kinds), user)
    return list(
        outcomes.filter(created_at__gte=now - timedelta(days=DAYS))
        .select_related("task", "tenant")
        .annotate(last_error=Subquery(last_error.order_by("-created_at", "-id").values("error")[:1]))
        .order_by("-created_at")[:FAILURES]
    )


def _heartbeats(now: datetime) -> list[Heartbeat]:
    beats = []
    for row in SchedulerHeartbeat.objects.order_by("-last_beat")[:10]:
        age = (now - row.last_beat).total_seconds()
        beats.append(
            Heartbeat(row.name, row.last_beat, round(age, 1), age <= settings.HEALTH_HEARTBEAT_MAX_AGE)
        )
    return beats


def _lateness(user, now: datetime) -> Lateness:
    """The tasks delivered in the last hour, and the lateness of those that measured it: from
    each delivery's first request (chunk 0 of its approval, a retry not counted again), due
    time → start of the run. Only LINE's publisher measures it (deliveries/channels/line/)."""
    since = now - LATENESS_WINDOW
    delivered = scope(ContentTask.objects.filter(delivered_at__gte=since), user).count()
    attempts = scope(DeliveryAttempt.objects.filter(created_at__gte=since, chunk=0), user)
    firsts: dict[tuple[int, int], object] = {}
    rows = attempts.order_by("created_at", "id").values_list(
        "task_id", "approval_seq", "request_summary__lateness_ms"
    )
    for task_id, seq, lateness in rows:
        firsts.setdefault((task_id, seq), lateness)
    values = sorted(int(v) for v in firsts.values() if v is not None)
    if not values:
        return Lateness(delivered, 0, None, None)
    rank = max(1, math.ceil(0.99 * len(values)))  # nearest-rank percentile
    return Lateness(delivered, len(values), values[rank - 1], values[-1])


def _scan(user) -> ScanSummary | None:
    run = ScanRun.objects.first()
    if run is None:
        return None
    ids = visible_tenant_ids(user)
    slugs = None if ids is None else set(Tenant.objects.filter(pk__in=ids).values_list("slug", flat=True))
    tenants = [r for r in run.results if slugs is None or r.get("tenant") in slugs]
    return ScanSummary(
        run=run,
        leaks=sum(len(r.get("leaks", [])) for r in tenants),
        rescued=sum(r.get("rescued", 0) for r in tenants),
        errors=sum(len(r.get("errors", [])) for r in tenants),
        tenants=[r for r in tenants if r.get("leaks") or r.get("errors")],
    )


def _quotas(user, now: datetime) -> list[Quota]:
    """This month's LINE use of each tenant: the one figure of line.usage."""
    tenants = list(scope(Tenant.objects.filter(is_active=True), user, ""))
    usages = line_usages(tenants=tenants, now=now)
    return [Quota(t, usages[t.pk]) for t in tenants]

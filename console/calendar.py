"""The 配信カレンダー page: a week or a month (JST, weeks from Monday) of what goes out.

Entries come from `console.calendar_entries`; this module lays them out in days (and
hours in the week view), shades the quiet hours and builds the navigation. Like the
dashboard it is drawn by the server: no JavaScript, no outside asset.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from console.calendar_entries import (
    FAILED,
    GROUP_POST,
    MISSED,
    SCHEDULED,
    SENT,
    WAITING,
    Entry,
    Window,
    calendar_entries,
)
from core.access import scope
from core.channels import CHANNELS
from core.models import Tenant
from core.quiet_hours import QuietHours, quiet_windows
from core.timeutil import JST

WEEK, MONTH = "week", "month"
MONTH_CELL_LIMIT = 6  # entries a month's day shows; the rest are one click away in its week
FIRST_DAY, LAST_DAY = date(2000, 1, 1), date(2099, 12, 31)  # dates the page accepts
STATES = {
    SCHEDULED: _("予約済み"),
    SENT: _("送信済み"),
    FAILED: _("失敗"),
    WAITING: _("承認待ち"),
    MISSED: _("期限切れ（未承認）"),
}
# What the calendar names and colours (console.css .am-ch-*): each channel and the group posts.
SHOWN_CHANNELS = {**{kind: c.label for kind, c in CHANNELS.items()}, GROUP_POST: _("LINE グループ投稿")}


class CalendarQuery(forms.Form):
    """The page's query string; a field that does not validate falls back to its default."""

    view = forms.ChoiceField(choices=[(WEEK, _("週")), (MONTH, _("月"))], required=False)
    date = forms.DateField(input_formats=["%Y-%m-%d"], required=False)
    tenant = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)

    def __init__(self, data, *, tenants: list[Tenant]):
        super().__init__(data)
        self.fields["tenant"].choices = [("", _("すべてのテナント")), *((t.pk, str(t)) for t in tenants)]

    def clean_date(self) -> date | None:
        value = self.cleaned_data["date"]
        if value is not None and not FIRST_DAY <= value <= LAST_DAY:
            raise ValidationError(_("日付は 2000-01-01〜2099-12-31 の範囲で指定してください。"))
        return value

    def value(self, name: str, default):
        """The field's cleaned value, or `default` when it is missing or does not validate."""
        self.is_valid()
        value = self.cleaned_data.get(name)
        return default if value in (None, "") else value


@dataclass(frozen=True)
class Period:
    view: str
    anchor: date  # the day asked for: its week, or its month

    @property
    def is_week(self) -> bool:
        return self.view == WEEK

    @property
    def first(self) -> date:
        start = self.anchor if self.view == WEEK else self.anchor.replace(day=1)
        return start - timedelta(days=start.weekday())

    @property
    def last(self) -> date:
        if self.view == WEEK:
            return self.first + timedelta(days=6)
        month_end = _month_shift(self.anchor, 1) - timedelta(days=1)
        return month_end + timedelta(days=6 - month_end.weekday())

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time(0), tzinfo=JST)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last + timedelta(days=1), time(0), tzinfo=JST)

    def shifted(self, step: int) -> date:
        """The anchor of the previous (-1) or next (+1) week or month, kept within the accepted dates."""
        moved = self.anchor + timedelta(weeks=step) if self.view == WEEK else _month_shift(self.anchor, step)
        return min(max(moved, FIRST_DAY), LAST_DAY)


def _month_shift(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


@dataclass(frozen=True)
class Shade:
    """A quiet span in a day or an hour, in percent of it (top/left and height/width)."""

    offset: float
    size: float


@dataclass(frozen=True)
class Shown:
    entry: Entry
    quiet: bool  # inside its tenant's quiet hours

    @property
    def channel_class(self) -> str:
        return self.entry.channel if self.entry.channel in SHOWN_CHANNELS else "other"

    @property
    def channel_label(self) -> str:
        return str(SHOWN_CHANNELS.get(self.entry.channel, self.entry.channel or "-"))

    @property
    def state_label(self) -> str:
        return str(STATES[self.entry.state])


@dataclass
class Slot:
    """An hour of a day (week view) or a whole day (month view)."""

    shown: list[Shown] = field(default_factory=list)
    quiet: list[Shade] = field(default_factory=list)


@dataclass
class Day:
    date: date
    today: bool
    in_period: bool  # a day of the month drawn (the month view also shows its weeks' ends)
    slot: Slot
    hours: list[Slot]
    week_url: str = ""

    @property
    def visible(self) -> list[Shown]:
        return self.slot.shown[:MONTH_CELL_LIMIT]

    @property
    def hidden(self) -> int:
        return max(0, len(self.slot.shown) - MONTH_CELL_LIMIT)


@dataclass
class Calendar:
    period: Period
    today: date
    days: list[Day]
    tenants: list[Tenant]
    tenant_id: int | None
    quiet: QuietHours | None  # what is shaded; None when the tenants drawn differ
    links: dict[str, str]
    count: int
    states: dict = field(default_factory=lambda: STATES)
    channels: dict = field(default_factory=lambda: SHOWN_CHANNELS)

    @property
    def weeks(self) -> list[list[Day]]:
        return [self.days[n : n + 7] for n in range(0, len(self.days), 7)]

    @property
    def hour_rows(self) -> list[tuple[int, list[tuple[Day, Slot]]]]:
        return [(hour, [(day, day.hours[hour]) for day in self.days]) for hour in range(24)]

    @property
    def quiet_text(self) -> str:
        """The shaded ranges as the settings say them: `22:00〜08:00 (Asia/Tokyo)`."""
        if self.quiet is None or not self.quiet.enabled:
            return ""
        ranges = ", ".join(f"{r['from']}〜{r['to']}" for r in self.quiet.to_config()["ranges"])
        return f"{ranges} ({self.quiet.timezone})"


def calendar_tenants(*, user) -> list[Tenant]:
    return list(scope(Tenant.objects.only("slug", "name", "quiet_hours").order_by("slug"), user, ""))


def calendar_build(
    *, user, tenants: list[Tenant], period: Period, tenant_id: int | None, now: datetime
) -> Calendar:
    window = Window(period.start, period.end, now, tenant_id)
    configs = {t.pk: _quiet_hours(t) for t in tenants}
    shaded = _shaded(configs, tenant_id)
    spans = quiet_windows(quiet=shaded, start=window.start, end=window.end) if shaded else []
    shown = [
        Shown(e, _inside(configs.get(e.tenant_id), e.at)) for e in calendar_entries(user=user, window=window)
    ]
    today = now.astimezone(JST).date()
    buckets: dict[tuple[date, int], list[Shown]] = defaultdict(list)
    for item in shown:
        local = item.entry.at.astimezone(JST)
        buckets[local.date(), local.hour].append(item)
    days = [_day(period, d, today, buckets, spans, tenant_id) for d in period.days]
    return Calendar(
        period, today, days, tenants, tenant_id, shaded, _links(period, today, tenant_id), len(shown)
    )


def _quiet_hours(tenant: Tenant) -> QuietHours:
    try:
        return tenant.quiet_hours_config()
    except ValidationError:  # saved past the admin's validation: nothing to shade, not a 500
        return QuietHours()


def _shaded(configs: dict[int, QuietHours], tenant_id: int | None) -> QuietHours | None:
    """The quiet hours to shade: the tenant's chosen, or those every tenant drawn shares."""
    drawn = {configs[tenant_id]} if tenant_id in configs else set(configs.values())
    if not drawn:
        return QuietHours()
    return drawn.pop() if len(drawn) == 1 else None


def _inside(quiet: QuietHours | None, at: datetime) -> bool:
    return quiet is not None and quiet.check(at).inside


def _day(period: Period, day: date, today: date, buckets, spans, tenant_id: int | None) -> Day:
    start = datetime.combine(day, time(0), tzinfo=JST)
    hour = timedelta(hours=1)
    hours = [Slot(buckets.get((day, h), []), _shades(spans, start + h * hour, hour)) for h in range(24)]
    whole = Slot([s for slot in hours for s in slot.shown], _shades(spans, start, timedelta(days=1)))
    in_period = period.view == WEEK or day.month == period.anchor.month
    return Day(day, day == today, in_period, whole, hours, _url(WEEK, day, tenant_id))


def _shades(spans, start: datetime, length: timedelta) -> list[Shade]:
    shades = []
    for low, high in spans:
        low, high = max(low, start), min(high, start + length)
        if low < high:
            shades.append(Shade(100 * (low - start) / length, 100 * (high - low) / length))
    return shades


def _url(view: str, day: date, tenant_id: int | None) -> str:
    query = {"view": view, "date": day.isoformat()}
    if tenant_id is not None:
        query["tenant"] = tenant_id
    return "?" + urlencode(query)


def _links(period: Period, today: date, tenant_id: int | None) -> dict[str, str]:
    return {
        "previous": _url(period.view, period.shifted(-1), tenant_id),
        "next": _url(period.view, period.shifted(1), tenant_id),
        "today": _url(period.view, today, tenant_id),
        WEEK: _url(WEEK, period.anchor, tenant_id),
        MONTH: _url(MONTH, period.anchor, tenant_id),
    }

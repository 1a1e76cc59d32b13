"""Quiet hours: the `quiet_hours` block of a tenant's project.yml (seed 000).

Ranges are wall-clock times in the configured zone; ``to`` is exclusive, a range
whose ``to`` is not after ``from`` crosses midnight, and ranges that overlap or
touch form one window (22:00–24:00 plus 00:00–08:00 ends at 08:00).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from django.core.exceptions import ValidationError
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from core.i18n import japanese

REJECT = "reject"
DEFER = "defer"
MODES = (REJECT, DEFER)  # the `mode` values of project.yml
KEYS = ("enabled", "timezone", "ranges", "mode")
RANGE_KEYS = ("from", "to")
DEFAULT_TIMEZONE = "Asia/Tokyo"

_HHMM = re.compile(r"(\d{1,2}):(\d{2})")
_MINUTES_PER_DAY = 24 * 60
_MIDNIGHT = time(0, 0)


@dataclass(frozen=True)
class QuietVerdict:
    inside: bool
    window_end: datetime | None
    display: Any  # lazy text in the reader's language (the admin's preview)

    @property
    def message(self) -> str:
        """In Japanese whatever the request's language: Backlog comments and stored errors."""
        return japanese(self.display)


class QuietAction(StrEnum):
    """What a delivery time inside or outside the quiet hours leads to."""

    SEND = "send"  # outside: keep the time
    DEFER = "defer"  # inside, mode defer: move to the window's end
    REJECT = "reject"  # inside, mode reject: refuse the time


@dataclass(frozen=True)
class QuietDecision:
    action: QuietAction
    due_at: datetime  # the time asked for, or the window's end when deferred
    verdict: QuietVerdict


@dataclass(frozen=True)
class QuietHours:
    enabled: bool = False
    timezone: str = DEFAULT_TIMEZONE
    ranges: tuple[tuple[time, time], ...] = ()
    mode: str = REJECT

    def __post_init__(self) -> None:
        problems = _semantic_problems(self.enabled, self.timezone, list(self.ranges), self.mode)
        if problems:
            raise ValidationError(problems)

    @classmethod
    def from_config(cls, data: dict | None) -> QuietHours:
        if data is None or data == {}:
            return cls()
        if not isinstance(data, dict):
            raise ValidationError([_type_message("quiet_hours", data, "キーと値の組（マッピング）")])
        problems = [msg for key in data if (msg := _unknown_key_message(key, KEYS, "quiet_hours"))]
        # A block that is present but silent about `enabled` is meant to work:
        # defaulting to off would let a 3 a.m. push through unnoticed.
        enabled = _read_enabled(data.get("enabled", True), problems)
        timezone = _read_text(data, "timezone", DEFAULT_TIMEZONE, problems)
        mode = _read_text(data, "mode", REJECT, problems)
        entries = _read_ranges(data.get("ranges"), problems)
        problems.extend(_semantic_problems(enabled, timezone, entries, mode))
        if problems:
            raise ValidationError(problems)
        ranges = tuple(entry for entry in entries if entry is not None)
        return cls(enabled=enabled, timezone=timezone, ranges=ranges, mode=mode)

    @classmethod
    def from_yaml(cls, text: str) -> QuietHours:
        try:
            document = yaml.load(text or "", Loader=_Loader)
        except yaml.YAMLError as exc:
            raise ValidationError([f"project.yml を YAML として読めません: {exc}"]) from exc
        if document is None:
            return cls()
        if not isinstance(document, dict):
            raise ValidationError([_type_message("project.yml", document, "キーと値の組（マッピング）")])
        if "quiet_hours" in document:
            return cls.from_config(document["quiet_hours"])
        if set(document) & set(KEYS):
            return cls.from_config(document)
        return cls()

    def to_config(self) -> dict:
        return {
            "enabled": self.enabled,
            "timezone": self.timezone,
            "ranges": [{"from": _hhmm(start), "to": _hhmm_to(end)} for start, end in self.ranges],
            "mode": self.mode,
        }

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def check(self, when: datetime) -> QuietVerdict:
        if when.tzinfo is None or when.utcoffset() is None:
            raise ValueError("QuietHours.check() needs an aware datetime")
        local = when.astimezone(self.zone)
        if not self.enabled:
            return QuietVerdict(False, None, _("静粛時間帯は無効です。"))
        window = _window_containing(self.ranges, local.replace(tzinfo=None))
        if window is None:
            return QuietVerdict(
                False, None, format_lazy(_("投稿日時 {at} は静粛時間帯の外です。"), at=_show(local))
            )
        end = _instant_of_wall(window[1], self.zone, after=when)
        return QuietVerdict(True, end, self._inside_message(local, window, end))

    def _inside_message(self, local: datetime, window: tuple[datetime, datetime], end: datetime) -> Any:
        values = {"at": _show(local), "start": _hhmm(window[0].time()), "end": _hhmm_to(window[1].time())}
        if self.mode == DEFER:
            text = _(
                "投稿日時 {at} は静粛時間帯 {start}〜{end} に入っています。静粛時間帯が終わる {until} に延期します。"
            )
            return format_lazy(text, until=_show(end), **values)
        text = _(
            "投稿日時 {at} は静粛時間帯 {start}〜{end} に入っています。静粛時間帯の外になるよう投稿日時を見直してください。"
        )
        return format_lazy(text, **values)


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps unquoted times such as 22:00 as text."""


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    # YAML 1.1 reads an unquoted 22:00 as the base-60 integer 1320.
    if ":" in str(node.value):
        return loader.construct_scalar(node)
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _read_enabled(value: Any, problems: list[str]) -> bool:
    if isinstance(value, bool):
        return value
    problems.append(_type_message("quiet_hours.enabled", value, "true か false のどちらか"))
    return False


def _read_text(data: dict, key: str, default: str, problems: list[str]) -> str:
    value = data.get(key, default)
    if isinstance(value, str):
        return value.strip()
    problems.append(_type_message(f"quiet_hours.{key}", value, "文字列"))
    return default


def _read_ranges(value: Any, problems: list[str]) -> list[tuple[time, time] | None]:
    """One entry per configured range, None where it could not be read (keeps indexes)."""
    if value is None:
        return []
    if not isinstance(value, list):
        example = '- { from: "22:00", to: "08:00" } の並び'
        problems.append(_type_message("quiet_hours.ranges", value, example))
        return []
    return [_read_range(item, f"quiet_hours.ranges[{i}]", problems) for i, item in enumerate(value)]


def _read_range(item: Any, path: str, problems: list[str]) -> tuple[time, time] | None:
    if not isinstance(item, dict):
        problems.append(_type_message(path, item, '{ from: "22:00", to: "08:00" } の形'))
        return None
    for key in item:
        if message := _unknown_key_message(key, RANGE_KEYS, path):
            problems.append(message)
    start = _read_time(item.get("from"), f"{path}.from", problems, allow_24=False)
    end = _read_time(item.get("to"), f"{path}.to", problems, allow_24=True)
    if start is None or end is None:
        return None
    return start, end


def _read_time(value: Any, path: str, problems: list[str], *, allow_24: bool) -> time | None:
    if value is None:
        problems.append(f'{path} がありません（"HH:MM" 形式の時刻を書いてください）。')
        return None
    parsed = _parse_hhmm(value, allow_24=allow_24) if isinstance(value, str) else None
    if parsed is None:
        upper = "24:00" if allow_24 else "23:59"
        problems.append(
            f"{path} の値「{value}」は時刻として読めません"
            f'（"HH:MM" 形式の文字列で 00:00〜{upper}、'
            'YAML では "22:00" のように引用符で囲んでください）。'
        )
    return parsed


def _parse_hhmm(text: str, *, allow_24: bool) -> time | None:
    match = _HHMM.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute = int(match[1]), int(match[2])
    if allow_24 and (hour, minute) == (24, 0):
        # 24:00 is the end of the day; as a wall-clock time it is the next midnight.
        return _MIDNIGHT
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _semantic_problems(
    enabled: bool, timezone: str, entries: list[tuple[time, time] | None], mode: str
) -> list[str]:
    ranges = tuple(entry for entry in entries if entry is not None)
    problems = [message for message in (_timezone_problem(timezone), _mode_problem(mode)) if message]
    problems.extend(_zero_length_problems(entries))
    if enabled and not entries:
        problems.append("quiet_hours が有効（enabled: true）なのに ranges がありません。")
    if _covers_whole_day(ranges):
        problems.append("静粛時間帯が 24 時間すべてを覆っているため、配信できる時刻がありません。")
    return problems


def _zero_length_problems(entries: list[tuple[time, time] | None]) -> list[str]:
    return [
        f"quiet_hours.ranges[{i}]: from と to が同じ {_hhmm(entry[0])} です"
        "（長さ 0 か 24 時間か決められません）。"
        for i, entry in enumerate(entries)
        if entry is not None and entry[0] == entry[1]
    ]


def _timezone_problem(name: str) -> str | None:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        return f"quiet_hours.timezone「{name}」はタイムゾーンとして不明です（例: Asia/Tokyo）。"
    return None


def _mode_problem(mode: str) -> str | None:
    if mode in MODES:
        return None
    return f"quiet_hours.mode「{mode}」は使えません（reject か defer を指定してください）。"


def _unknown_key_message(key: Any, allowed: tuple[str, ...], path: str) -> str | None:
    if key in allowed:
        return None
    return f"{path} の「{key}」は不明な項目です（使える項目: {', '.join(allowed)}）。"


def _type_message(path: str, value: Any, expected: str) -> str:
    return f"{path} の値「{value}」は使えません（{expected}を指定してください）。"


def _covers_whole_day(ranges: tuple[tuple[time, time], ...]) -> bool:
    covered = bytearray(_MINUTES_PER_DAY)
    for start, end in ranges:
        first, last = _minute_of(start), _minute_of(end)
        span = (last - first) % _MINUTES_PER_DAY
        for offset in range(span):
            covered[(first + offset) % _MINUTES_PER_DAY] = 1
    return bool(ranges) and all(covered)


def _minute_of(moment: time) -> int:
    return moment.hour * 60 + moment.minute


def _window_containing(
    ranges: tuple[tuple[time, time], ...], wall: datetime
) -> tuple[datetime, datetime] | None:
    intervals = _intervals_around(ranges, wall.date())
    hits = [(start, end) for start, end in intervals if start <= wall < end]
    if not hits:
        return None
    start, end = min(s for s, _ in hits), max(e for _, e in hits)
    changed = True
    while changed:
        changed = False
        for other_start, other_end in intervals:
            if other_start <= end < other_end:
                end, changed = other_end, True
            if other_start < start <= other_end:
                start, changed = other_start, True
    return start, end


def _intervals_around(ranges: tuple[tuple[time, time], ...], day: date) -> list[tuple[datetime, datetime]]:
    # A chained window is shorter than a day (whole-day cover is rejected), so
    # two days either side are enough to find both of its ends.
    return [span for offset in range(-2, 3) for span in _intervals_from(ranges, day + timedelta(days=offset))]


def _intervals_from(ranges: tuple[tuple[time, time], ...], day: date) -> list[tuple[datetime, datetime]]:
    """The wall-clock intervals of the ranges that start on `day` (a crossing one ends the next day)."""
    intervals = []
    for start, end in ranges:
        end_day = day if end > start else day + timedelta(days=1)
        intervals.append((datetime.combine(day, start), datetime.combine(end_day, end)))
    return intervals


def _instant_of_wall(wall: datetime, zone: ZoneInfo, *, after: datetime) -> datetime:
    """The first instant after `after` at which the zone's clock shows `wall`."""
    # Work in UTC: datetimes sharing a tzinfo compare by wall clock and ignore `fold`.
    instants = sorted({wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1)})
    exact = [moment for moment in instants if _wall_of(moment, zone) == wall]
    if exact:
        # Twice on a fall-back night; take the occurrence that is still ahead.
        later = [moment for moment in exact if moment > after.astimezone(UTC)]
        return (later[0] if later else exact[-1]).astimezone(zone)
    # The wall time is skipped by a spring-forward jump: the clock passes it at the jump.
    return _transition_between(instants[0], instants[-1], zone)


def _wall_of(moment: datetime, zone: ZoneInfo) -> datetime:
    return moment.astimezone(zone).replace(tzinfo=None)


def _transition_between(low: datetime, high: datetime, zone: ZoneInfo) -> datetime:
    before = low.astimezone(zone).utcoffset()
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0).astimezone(zone)


def _hhmm(moment: time) -> str:
    return moment.strftime("%H:%M")


def _hhmm_to(moment: time) -> str:
    return "24:00" if moment == _MIDNIGHT else _hhmm(moment)


def _show(moment: datetime) -> str:
    pattern = "%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M"
    return f"{moment.strftime(pattern)} ({moment.tzname()})"


def quiet_hours_apply(*, quiet: QuietHours, when: datetime) -> QuietDecision:
    """The one place the quiet-hours mode is applied to a delivery time (seed 000)."""
    verdict = quiet.check(when)
    if not verdict.inside:
        return QuietDecision(QuietAction.SEND, when, verdict)
    if quiet.mode == DEFER:
        return QuietDecision(QuietAction.DEFER, verdict.window_end, verdict)
    return QuietDecision(QuietAction.REJECT, when, verdict)


def quiet_windows(*, quiet: QuietHours, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """The windows overlapping [start, end), clipped and merged, in UTC (drawn by the admin's calendar)."""
    if not quiet.enabled:
        return []
    zone, first = quiet.zone, start.astimezone(quiet.zone).date() - timedelta(days=1)
    spans = []
    for offset in range((end.astimezone(zone).date() - first).days + 1):
        for wall_start, wall_end in _intervals_from(quiet.ranges, first + timedelta(days=offset)):
            low = max(wall_start.replace(tzinfo=zone).astimezone(UTC), start.astimezone(UTC))
            high = min(wall_end.replace(tzinfo=zone).astimezone(UTC), end.astimezone(UTC))
            if low < high:
                spans.append((low, high))
    return _merged(sorted(spans))


def _merged(spans: list[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    merged: list[tuple[datetime, datetime]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged

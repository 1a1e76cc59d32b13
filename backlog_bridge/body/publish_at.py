"""投稿日時: read from the issue's custom field when it has one, else from `## 配信メタ`."""

from __future__ import annotations

import calendar
import re
import unicodedata
from datetime import date, datetime, time
from typing import Any

from backlog_bridge.body.sections import KEY_PUBLISH_AT, SECTION_META, Item, meta_key, missing_item
from core.timeutil import JST

TEXT_FIELD_TYPES = (1, 2)
DATE_FIELD_TYPE = 4

PUBLISH_AT_FORMATS = (
    "使える書式: 2026-05-15 10:00 / 2026-05-15 10:00:00 / 2026/05/15 10:00"
    "（後ろの (JST) は省略可、タイムゾーンなしは JST）、"
    "または ISO-8601 の 2026-05-15T10:00:00+09:00"
)

_JST_SUFFIX = re.compile(r"\s*(?:\(\s*JST\s*\)|JST)\Z", re.IGNORECASE)
_LOCAL = re.compile(r"(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?:\s+|T)(\d{1,2}):(\d{2})(?::(\d{2}))?")
_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)
_TIME_ONLY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_CUSTOM_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:T00:00:00(?:\.0+)?Z)?")


def parse_publish_at(text: str) -> datetime:
    source = unicodedata.normalize("NFKC", str(text or "")).strip()
    shown = str(text or "").strip()
    if not source:
        raise ValueError(f"投稿日時が空です。{PUBLISH_AT_FORMATS}。")
    body, says_jst = _strip_jst(source)
    if match := _LOCAL.fullmatch(body):
        return _local_datetime(match, shown)
    if _ISO.fullmatch(body):
        return _iso_datetime(body, shown, says_jst=says_jst)
    raise ValueError(f"投稿日時「{shown}」を日時として読めません。{PUBLISH_AT_FORMATS}。")


def publish_field(custom_fields: Any) -> dict | None:
    if not isinstance(custom_fields, list):
        return None
    for candidate in custom_fields:
        if not isinstance(candidate, dict) or meta_key(str(candidate.get("name") or "")) != KEY_PUBLISH_AT:
            continue
        if str(candidate.get("value") or "").strip():
            return candidate
    return None


def publish_at_read(
    item: Item | None, custom: dict | None, has_meta: bool, errors: list[str]
) -> tuple[datetime | None, str]:
    if custom is not None:
        when = _from_custom_field(custom, item, errors)
        return when, ("custom_field" if when else "")
    if item is None or not item.value:
        if has_meta:
            errors.append(missing_item(KEY_PUBLISH_AT, "2026-05-15 10:00 (JST)"))
        return None, ""
    try:
        return parse_publish_at(item.value), "body"
    except ValueError as exc:
        errors.append(_body_publish_message(item.value, exc))
        return None, ""


def _body_publish_message(value: str, exc: ValueError) -> str:
    if _time_of_day(value) is not None:
        return f"本文の投稿日時「{value}」に日付がありません（例: 2026-05-15 10:00）。"
    return f"本文の{exc}"


def _from_custom_field(custom: dict, item: Item | None, errors: list[str]) -> datetime | None:
    type_id, value = _as_int(custom.get("fieldTypeId")), str(custom.get("value")).strip()
    if type_id in TEXT_FIELD_TYPES:
        try:
            return parse_publish_at(value)
        except ValueError as exc:
            errors.append(f"カスタムフィールドの{exc}")
            return None
    if type_id == DATE_FIELD_TYPE:
        return _from_date_field(value, item, errors)
    errors.append(
        f"カスタムフィールド「{KEY_PUBLISH_AT}」の種類（fieldTypeId={custom.get('fieldTypeId')}）には"
        "対応していません（文字列か日付のフィールドにしてください）。"
    )
    return None


def _from_date_field(value: str, item: Item | None, errors: list[str]) -> datetime | None:
    day = _custom_date(value)
    if day is None:
        errors.append(
            f"カスタムフィールドの投稿日時「{value}」を日付として読めません（YYYY-MM-DD の形が必要です）。"
        )
        return None
    if item is None or not item.value:
        errors.append(
            f"カスタムフィールドの投稿日時は日付（{day.isoformat()}）だけで時刻がありません。"
            f"本文の「## {SECTION_META}」に時刻を書いてください（例: - 投稿日時: 10:00）。"
        )
        return None
    moment = _time_of_day(item.value)
    if moment is None:
        errors.append(
            f"本文の投稿日時「{item.value}」から時刻を読めません"
            f"（カスタムフィールドの日付 {day.isoformat()} と組み合わせます。例: 10:00）。"
        )
        return None
    return datetime.combine(day, moment, tzinfo=JST)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _custom_date(value: str) -> date | None:
    # Backlog returns a date field both as 2026-05-15 and as 2026-05-15T00:00:00Z;
    # either way it is a calendar date, not an instant in UTC.
    match = _CUSTOM_DATE.fullmatch(value)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def _time_of_day(text: str) -> time | None:
    """The JST time of day in a body 投稿日時 that is a full date-time or a bare HH:MM[:SS]."""
    try:
        return parse_publish_at(text).astimezone(JST).time()
    except ValueError:
        pass
    body, _ = _strip_jst(unicodedata.normalize("NFKC", text).strip())
    match = _TIME_ONLY.fullmatch(body)
    if match is None:
        return None
    hour, minute, second = int(match[1]), int(match[2]), int(match[3] or 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    return time(hour, minute, second)


def _strip_jst(text: str) -> tuple[str, bool]:
    match = _JST_SUFFIX.search(text)
    if match is None:
        return text, False
    return text[: match.start()].strip(), True


def _local_datetime(match: re.Match[str], shown: str) -> datetime:
    year, month, day, hour, minute = (int(match[i]) for i in (1, 3, 4, 5, 6))
    second = int(match[7] or 0)
    if reason := _impossible(year, month, day, hour, minute, second):
        raise ValueError(f"投稿日時「{shown}」は存在しない日時です（{reason}）。")
    return datetime(year, month, day, hour, minute, second, tzinfo=JST)


def _impossible(year: int, month: int, day: int, hour: int, minute: int, second: int) -> str:
    if not 1 <= year <= 9998:
        return f"年 {year} は範囲外です"
    if not 1 <= month <= 12:
        return f"月は 1〜12 ですが {month} になっています"
    last = calendar.monthrange(year, month)[1]
    if not 1 <= day <= last:
        return f"{year}年{month}月は {last} 日までですが {day} 日になっています"
    if hour > 23:
        return f"時は 0〜23 ですが {hour} になっています"
    if minute > 59 or second > 59:
        return "分と秒は 0〜59 です"
    return ""


def _iso_datetime(body: str, shown: str, *, says_jst: bool) -> datetime:
    try:
        parsed = datetime.fromisoformat(body.upper().replace(" ", "T", 1))
        result = parsed if parsed.tzinfo else parsed.replace(tzinfo=JST)
        result = result.astimezone(JST)
    except (ValueError, OverflowError):
        raise ValueError(f"投稿日時「{shown}」は存在しない日時です。{PUBLISH_AT_FORMATS}。") from None
    offset = parsed.utcoffset()
    if says_jst and offset is not None and offset != result.utcoffset():
        raise ValueError(
            f"投稿日時「{shown}」は (JST) と書かれていますが、時差の指定が +09:00 ではありません。"
        )
    return result

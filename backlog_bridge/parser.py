"""Parse a Backlog issue description written in the seed-001 template.

Every problem found is collected into ``ParsedTask.errors`` in Japanese, because
the list is posted back to the issue as a comment for the manager to fix. No
input string makes this module raise, except the two documented ``ValueError``
parsers (``parse_publish_at`` and ``TemplateRef.parse``).
"""

from __future__ import annotations

import calendar
import hashlib
import re
import textwrap
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from backlog_bridge.audience import AudienceError, parse_audience

JST = ZoneInfo("Asia/Tokyo")

# The one list of channels (value of チャネル → label); every other list derives from it.
CHANNELS = {"line": "LINE", "tiktok": "TikTok", "instagram": "Instagram", "hubspot": "HubSpot"}
# Channels published through a channel account (deliveries/channels/<kind>/); LINE uses the tenant's token.
PLATFORM_CHANNELS = tuple(channel for channel in CHANNELS if channel != "line")
AUDIENCE_REQUIRED = ("line", "hubspot")
GROUP_CHANNELS = ("line",)

SECTION_META = "配信メタ"
SECTION_VARIABLES = "文面/変数"
SECTION_ATTACHMENTS = "添付"

KEY_CHANNEL = "チャネル"
KEY_PUBLISH_AT = "投稿日時"
KEY_AUDIENCE = "対象タグ"
KEY_TEMPLATE = "テンプレ"
META_KEYS = (KEY_CHANNEL, KEY_PUBLISH_AT, KEY_AUDIENCE, KEY_TEMPLATE)
# Optional: the LINE group told about the task (linepush's task_approved / reminder posts).
KEY_CONTACT_GROUP = "連絡グループ"
OPTIONAL_META_KEYS = (KEY_CONTACT_GROUP,)
# Spellings managers actually use for the same items.
META_ALIASES = {"チャンネル": KEY_CHANNEL, "テンプレート": KEY_TEMPLATE}

NOTHING = ("なし", "無し", "ナシ")
TEXT_FIELD_TYPES = (1, 2)
DATE_FIELD_TYPE = 4

PUBLISH_AT_FORMATS = (
    "使える書式: 2026-05-15 10:00 / 2026-05-15 10:00:00 / 2026/05/15 10:00"
    "（後ろの (JST) は省略可、タイムゾーンなしは JST）、"
    "または ISO-8601 の 2026-05-15T10:00:00+09:00"
)

_HEADING = re.compile(r" {0,3}##(?!#)[ \t\u3000]*(?P<title>.*?)[ \t\u3000#]*")
_ITEM = re.compile(r"\s*[-*+・]\s*(?P<key>[^:：]+?)\s*[:：]\s*(?P<value>.*?)\s*")
_CONTINUATION = re.compile(r"(?: {2,}|\t|\u3000)\s*\S.*")
_VARIABLE_KEY = re.compile(r"[\w.\-]+")
_PUBLISH_LINE = re.compile(r"\s*[-*+・]\s*投稿日時\s*[:：]")

_JST_SUFFIX = re.compile(r"\s*(?:\(\s*JST\s*\)|JST)\Z", re.IGNORECASE)
_LOCAL = re.compile(r"(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?:\s+|T)(\d{1,2}):(\d{2})(?::(\d{2}))?")
_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)
_TIME_ONLY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_CUSTOM_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:T00:00:00(?:\.0+)?Z)?")
_TEMPLATE_NAME = re.compile(r"[\w.\-/]+")
_TEMPLATE_REV = re.compile(r"[0-9A-Za-z._\-]+")
_LINE_GROUP_ID = re.compile(r"[CR][0-9A-Za-z_\-]{1,64}")


@dataclass(frozen=True)
class TemplateRef:
    name: str
    rev: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.rev}" if self.rev else self.name

    @classmethod
    def parse(cls, text: str) -> TemplateRef:
        source = unicodedata.normalize("NFKC", str(text or "")).strip()
        if not source:
            raise ValueError("テンプレが空です（例: announce_open@3f2a9c1、最新版なら announce_open）。")
        name, at, rev = source.partition("@")
        if problem := _template_problem(source, name, at, rev):
            raise ValueError(problem)
        return cls(name=name, rev=rev or None)


def _template_problem(source: str, name: str, at: str, rev: str) -> str | None:
    if "@" in rev:
        return f"テンプレ「{source}」に @ が 2 つ以上あります（名前@リビジョン の形で書いてください）。"
    if not name:
        return f"テンプレ「{source}」にテンプレ名がありません（例: announce_open@3f2a9c1）。"
    if not _TEMPLATE_NAME.fullmatch(name):
        return (
            f"テンプレ「{source}」のテンプレ名「{name}」に使えない文字があります"
            "（英数字・日本語・_ - . / のみ、空白不可）。"
        )
    if at and not rev:
        return (
            f"テンプレ「{source}」の @ の後にリビジョンがありません"
            "（最新版を使うなら @ ごと消してください）。"
        )
    if at and not _TEMPLATE_REV.fullmatch(rev):
        return (
            f"テンプレ「{source}」のリビジョン「{rev}」に使えない文字があります"
            "（英数字・_ - . のみ、例: 3f2a9c1）。"
        )
    return None


@dataclass(frozen=True)
class Attachment:
    kind: str
    value: str


@dataclass
class ParsedTask:
    channel: str | None = None
    publish_at: datetime | None = None
    publish_at_source: str = ""
    audience: str = ""
    template: TemplateRef | None = None
    variables: dict[str, str] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    contact_group: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict:
        return {
            "channel": self.channel,
            "publish_at": self.publish_at.astimezone(JST).isoformat() if self.publish_at else None,
            "publish_at_source": self.publish_at_source,
            "audience": self.audience,
            "template": str(self.template) if self.template else None,
            "variables": dict(self.variables),
            "attachments": [{"kind": a.kind, "value": a.value} for a in self.attachments],
            "errors": list(self.errors),
            "contact_group": self.contact_group,
        }

    @classmethod
    def from_json(cls, data: dict) -> ParsedTask:
        publish_at = data.get("publish_at")
        template = data.get("template")
        return cls(
            channel=data.get("channel"),
            publish_at=datetime.fromisoformat(publish_at).astimezone(JST) if publish_at else None,
            publish_at_source=data.get("publish_at_source", ""),
            audience=data.get("audience", ""),
            template=TemplateRef.parse(template) if template else None,
            variables=dict(data.get("variables") or {}),
            attachments=[Attachment(a["kind"], a["value"]) for a in data.get("attachments") or []],
            errors=list(data.get("errors") or []),
            contact_group=data.get("contact_group") or "",
        )


@dataclass
class _Line:
    number: int
    text: str


@dataclass
class _Section:
    title: str
    number: int
    lines: list[_Line] = field(default_factory=list)


@dataclass
class _Item:
    number: int
    value: str


# --- public entry points -----------------------------------------------------


def parse_issue(*, description: str | None, custom_fields: list[dict] | None = None) -> ParsedTask:
    errors: list[str] = []
    sections = _split_sections(_lines_of(description))
    meta = _find_section(sections, SECTION_META, errors)
    if meta is None:
        errors.append(_missing_meta_message(sections))
    items, has_meta = _meta_items(meta, errors), meta is not None
    task = ParsedTask(errors=errors)
    task.channel = _channel(items, has_meta, errors)
    task.publish_at, task.publish_at_source = _publish_at(
        items.get(KEY_PUBLISH_AT), _publish_field(custom_fields), has_meta, errors
    )
    task.audience = _audience(items.get(KEY_AUDIENCE), task.channel, errors)
    task.template = _template(items.get(KEY_TEMPLATE), has_meta, errors)
    task.contact_group = _contact_group(items.get(KEY_CONTACT_GROUP), errors)
    task.variables = _variables(_find_section(sections, SECTION_VARIABLES, errors), errors)
    task.attachments = _attachments(_find_section(sections, SECTION_ATTACHMENTS, errors), errors)
    return task


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


def content_fingerprint(description: str | None) -> str:
    # The publish time is left out so that "content changed" and "time changed"
    # while approved can be told apart (seed 000 reschedule vs invalidate).
    kept = [line.rstrip() for line in _lines_of(description) if not _PUBLISH_LINE.match(line)]
    normalized = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


# --- sections ------------------------------------------------------------------


def _lines_of(description: str | None) -> list[str]:
    text = str(description or "").removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _split_sections(lines: list[str]) -> list[_Section]:
    sections = [_Section(title="", number=0)]
    for number, text in enumerate(lines, start=1):
        heading = _HEADING.fullmatch(text)
        if heading:
            sections.append(_Section(title=_section_key(heading["title"]), number=number))
        else:
            sections[-1].lines.append(_Line(number, text))
    return sections


def _section_key(title: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", title))


def _find_section(sections: list[_Section], title: str, errors: list[str]) -> _Section | None:
    found = [section for section in sections if section.number and section.title == title]
    if len(found) > 1:
        where = "、".join(f"{section.number} 行目" for section in found)
        errors.append(
            f"見出し「## {_show_title(title)}」が {len(found)} 回あります（{where}）。"
            "1 つにまとめてください。"
        )
    return found[0] if found else None


def _show_title(title: str) -> str:
    return "文面 / 変数" if title == SECTION_VARIABLES else title


def _missing_meta_message(sections: list[_Section]) -> str:
    message = (
        f"本文に見出し「## {SECTION_META}」がありません。"
        f"{'・'.join(META_KEYS)}はこの見出しの下に「- 項目: 値」の形で書いてください。"
    )
    lookalike = next(
        (line for section in sections for line in section.lines if SECTION_META in line.text), None
    )
    if lookalike is not None:
        message += (
            f"（{lookalike.number} 行目「{lookalike.text.strip()}」は見出しとして読めません。"
            "行頭を「## 」にしてください）"
        )
    return message


def _items(section: _Section, errors: list[str], shape: str) -> list[tuple[str, _Item]]:
    pairs = []
    for line in section.lines:
        if not line.text.strip():
            continue
        match = _ITEM.fullmatch(line.text)
        if match is None:
            errors.append(
                f"「## {_show_title(section.title)}」の {line.number} 行目「{line.text.strip()}」は"
                f"「{shape}」の形ではありません。"
            )
            continue
        pairs.append((match["key"], _Item(line.number, match["value"])))
    return pairs


# --- 配信メタ ------------------------------------------------------------------


def _meta_items(meta: _Section | None, errors: list[str]) -> dict[str, _Item]:
    if meta is None:
        return {}
    items: dict[str, _Item] = {}
    for raw_key, item in _items(meta, errors, "- 項目: 値"):
        key = _meta_key(raw_key)
        if key not in META_KEYS + OPTIONAL_META_KEYS:
            errors.append(
                f"「## {SECTION_META}」の {item.number} 行目の項目「{raw_key}」は使えません"
                f"（使える項目: {'、'.join(META_KEYS)}）。"
            )
        elif key in items:
            errors.append(
                f"「## {SECTION_META}」に {key} が 2 回あります"
                f"（{items[key].number} 行目と {item.number} 行目）。"
            )
        else:
            items[key] = item
    return items


def _meta_key(raw: str) -> str:
    key = re.sub(r"\s+", "", unicodedata.normalize("NFKC", raw))
    return META_ALIASES.get(key, key)


def _missing(key: str, example: str) -> str:
    return f"「## {SECTION_META}」に {key} がありません（例: - {key}: {example}）。"


def _channel(items: dict[str, _Item], has_meta: bool, errors: list[str]) -> str | None:
    item = items.get(KEY_CHANNEL)
    accepted = " / ".join(CHANNELS.values())
    if item is None or not item.value:
        if has_meta:
            errors.append(
                _missing(KEY_CHANNEL, "LINE")
                if item is None
                else f"チャネル が空です（{accepted} のいずれか）。"
            )
        return None
    channel = unicodedata.normalize("NFKC", item.value).strip().lower()
    if channel not in CHANNELS:
        errors.append(
            f"チャネル「{item.value}」には対応していません（{accepted} のいずれかを書いてください）。"
        )
        return None
    return channel


def _contact_group(item: _Item | None, errors: list[str]) -> str:
    value = unicodedata.normalize("NFKC", item.value).strip() if item else ""
    if not value or value in NOTHING:
        return ""
    if not _LINE_GROUP_ID.fullmatch(value):
        errors.append(
            f"{KEY_CONTACT_GROUP}「{item.value}」は LINE のグループID ではありません"
            "（C で始まる ID、例: - 連絡グループ: C4af4980629…）。"
        )
        return ""
    return value


def _template(item: _Item | None, has_meta: bool, errors: list[str]) -> TemplateRef | None:
    if item is None:
        if has_meta:
            errors.append(_missing(KEY_TEMPLATE, "announce_open@3f2a9c1"))
        return None
    try:
        return TemplateRef.parse(item.value)
    except ValueError as exc:
        errors.append(str(exc))
        return None


def _audience(item: _Item | None, channel: str | None, errors: list[str]) -> str:
    text = item.value if item else ""
    if not text:
        if channel in AUDIENCE_REQUIRED:
            errors.append(
                f"チャネルが {CHANNELS[channel]} のときは {KEY_AUDIENCE} が必要です"
                "（例: - 対象タグ: tag:active, !tag:opt_out）。"
            )
        return text
    try:
        audience = parse_audience(text)
    except AudienceError as exc:
        errors.append(f"{KEY_AUDIENCE}「{text}」が不正です: {exc}")
        return text
    if audience.groups and channel is not None and channel not in GROUP_CHANNELS:
        errors.append(
            f"{KEY_AUDIENCE} の group: 指定は LINE でしか使えません（チャネル: {CHANNELS[channel]}）。"
        )
    return text


# --- 投稿日時 --------------------------------------------------------------------


def _publish_field(custom_fields: Any) -> dict | None:
    if not isinstance(custom_fields, list):
        return None
    for candidate in custom_fields:
        if not isinstance(candidate, dict) or _meta_key(str(candidate.get("name") or "")) != KEY_PUBLISH_AT:
            continue
        if str(candidate.get("value") or "").strip():
            return candidate
    return None


def _publish_at(
    item: _Item | None, custom: dict | None, has_meta: bool, errors: list[str]
) -> tuple[datetime | None, str]:
    if custom is not None:
        when = _from_custom_field(custom, item, errors)
        return when, ("custom_field" if when else "")
    if item is None or not item.value:
        if has_meta:
            errors.append(_missing(KEY_PUBLISH_AT, "2026-05-15 10:00 (JST)"))
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


def _from_custom_field(custom: dict, item: _Item | None, errors: list[str]) -> datetime | None:
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


def _from_date_field(value: str, item: _Item | None, errors: list[str]) -> datetime | None:
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


# --- 文面 / 変数 と 添付 ----------------------------------------------------------


@dataclass
class _Draft:
    key: str
    number: int
    first: str
    more: list[str] = field(default_factory=list)

    def value(self) -> str:
        rest = textwrap.dedent("\n".join(line.rstrip() for line in self.more))
        return "\n".join([self.first, rest] if self.more else [self.first]).strip()


def _variables(section: _Section | None, errors: list[str]) -> dict[str, str]:
    if section is None:
        return {}
    drafts: list[_Draft] = []
    current: _Draft | None = None
    for line in section.lines:
        if current is not None and (_CONTINUATION.fullmatch(line.text) or not line.text.strip()):
            current.more.append(line.text)
        elif line.text.strip():
            draft = _variable_draft(line, errors)
            drafts.extend([draft] if draft else [])
            # A rejected line keeps its indented continuation, so that is not reported again.
            current = draft or _Draft(key="", number=line.number, first="")
    return _collect_variables(drafts, errors)


def _variable_draft(line: _Line, errors: list[str]) -> _Draft | None:
    match = _ITEM.fullmatch(line.text)
    title = _show_title(SECTION_VARIABLES)
    if match is None:
        errors.append(
            f"「## {title}」の {line.number} 行目「{line.text.strip()}」は"
            "「- キー: 値」の形ではありません"
            "（値の続きの行は 2 文字以上字下げしてください）。"
        )
        return None
    if not _VARIABLE_KEY.fullmatch(match["key"]):
        errors.append(
            f"「## {title}」の {line.number} 行目の変数名「{match['key']}」は使えません"
            "（英数字・日本語・_ - . のみ、空白不可）。"
        )
        return None
    return _Draft(key=match["key"], number=line.number, first=match["value"])


def _collect_variables(drafts: list[_Draft], errors: list[str]) -> dict[str, str]:
    variables: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    for draft in drafts:
        if draft.key in variables:
            errors.append(
                f"変数「{draft.key}」が 2 回あります（{first_seen[draft.key]} 行目と {draft.number} 行目）。"
            )
            continue
        variables[draft.key] = draft.value()
        first_seen[draft.key] = draft.number
    return variables


def _attachments(section: _Section | None, errors: list[str]) -> list[Attachment]:
    if section is None:
        return []
    attachments = []
    for kind, item in _items(section, errors, "- 種類: ファイル名かURL"):
        if item.value.startswith("//"):
            errors.append(
                f"「## {SECTION_ATTACHMENTS}」の {item.number} 行目に種類がありません（例: - 画像: https://…）。"
            )
        elif item.value and item.value not in NOTHING:
            attachments.append(Attachment(kind=kind, value=item.value))
    return attachments

"""Versioned LINE message templates: resolve `name@rev`, fill 文面 / 変数, validate, import.

A template is a JSON array of 1–5 LINE message objects whose strings may hold
`{{ variable }}` placeholders (seed 001: テンプレ `announce_open@<commit>`, 文面 / 変数,
添付). Templates come from a folder of NAME.json files (the seed's theme repo); each
distinct content is one immutable `MessageTemplate` row whose `rev` is a hash of it.

Limits are LINE's message object limits (https://developers.line.biz/en/reference/messaging-api/#message-objects):
1–5 messages per request, text ≤ 5,000 characters, media URLs https and ≤ 2,000
characters, flex and template altText ≤ 1,500 characters, a flex bubble ≤ 30 KB and a
flex carousel ≤ 50 KB of JSON with ≤ 12 bubbles, and the template text, title, action
and column counts of #template-messages. Every problem message is Japanese: it is
posted to the Backlog issue or answered to the API caller.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from backlog_bridge.parser import Attachment, TemplateRef
from core.models import Tenant
from deliveries.models import MessageTemplate

MAX_MESSAGES = 5
TEXT_MAX = 5000
URL_MAX = 2000
ALT_TEXT_MAX = 1500
# https://developers.line.biz/en/reference/messaging-api/#bubble and #f-carousel: "The maximum
# size of JSON data that defines a bubble is 30 KB" / "a carousel is 50 KB", max 12 bubbles.
# LINE does not say how it counts a KB nor which serialization it measures: we count the
# bytes of the compact UTF-8 JSON that httpx sends, and a KB as 1,000 bytes, the stricter
# reading, so that a payload accepted here is not refused by LINE at send time.
FLEX_BUBBLE_MAX_BYTES = 30_000
FLEX_CAROUSEL_MAX_BYTES = 50_000
FLEX_CAROUSEL_MAX_BUBBLES = 12
# The whole push body (UNCONFIRMED verbatim: LINE's status-code table as copied by third
# parties, https://developers.line.biz/en/reference/messaging-api/#status-codes, "413 ...
# exceeds 2 MB"): the messages plus room for `to` and `notificationDisabled`.
REQUEST_MAX_BYTES = 2_000_000
REQUEST_ENVELOPE_BYTES = 200
# https://developers.line.biz/en/reference/messaging-api/#template-messages
TEMPLATE_TITLE_MAX = 40
TEMPLATE_BUTTONS_TEXT_MAX = 160
TEMPLATE_BUTTONS_TEXT_WITH_HEADER_MAX = 60  # with an image or a title
TEMPLATE_BUTTONS_ACTIONS_MAX = 4
TEMPLATE_CONFIRM_TEXT_MAX = 240
TEMPLATE_CONFIRM_ACTIONS_MAX = 2
TEMPLATE_COLUMNS_MAX = 10
TEMPLATE_COLUMN_TEXT_MAX = 120
TEMPLATE_COLUMN_TEXT_WITH_HEADER_MAX = 60
TEMPLATE_COLUMN_ACTIONS_MAX = 3
MESSAGE_TYPES = (
    "text",
    "textV2",
    "sticker",
    "image",
    "video",
    "audio",
    "location",
    "imagemap",
    "template",
    "flex",
    "coupon",
)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
# The same characters the issue parser accepts in a 文面 / 変数 key.
PLACEHOLDER = re.compile(r"\{\{\s*([\w.\-]+)\s*\}\}")
# A rev written shorter than stored (git style, as in the seed's `announce_open@3f2a9c1`).
MIN_REV_PREFIX = 7
SHOWN_REVS = 10
# Import-time stand-ins for placeholders: a string may be a URL built from a variable.
SAMPLE_URL = "https://example.com/sample.png"
SAMPLE_TEXT = "x"


class RenderError(ValueError):
    """Every problem that stops a template from becoming sendable messages."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class ImportResult:
    name: str
    rev: str = ""
    created: bool = False
    error: str | None = None
    # Set when the file equals an OLDER revision: `name` alone still means this newer rev.
    latest_rev: str | None = None


# --- resolve ----------------------------------------------------------------------


RESOLVED_TTL_SECONDS = 60.0
_resolved: dict[tuple, tuple[float, MessageTemplate]] = {}


def template_resolve(*, tenant: Tenant | None, ref: TemplateRef, channel: str = "line") -> MessageTemplate:
    """The tenant's own revision first, then the shared one (tenant=None).

    `rev` None means the latest (highest created_at, then id). A rev of at least
    MIN_REV_PREFIX characters also matches as a unique prefix of a stored rev.
    Revisions are immutable, so a `name@rev` found is remembered for a minute in this
    process (a burst of deliveries of one template reads it once); `name` alone never is.
    """
    key = (tenant.pk if tenant else None, ref.name, ref.rev, channel)
    hit = _resolved.get(key) if ref.rev else None
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    found = _resolve(tenant, ref, channel)
    if ref.rev:
        if len(_resolved) > 1024:
            _resolved.clear()
        _resolved[key] = (time.monotonic() + RESOLVED_TTL_SECONDS, found)
    return found


def _resolve(tenant: Tenant | None, ref: TemplateRef, channel: str) -> MessageTemplate:
    for scope in _scopes(tenant, ref.name, channel):
        found = _pick(scope, ref)
        if found is not None:
            return found
    raise RenderError([_not_found(tenant, ref, channel)])


def _scopes(tenant: Tenant | None, name: str, channel: str) -> list[QuerySet[MessageTemplate]]:
    templates = MessageTemplate.objects.filter(name=name, channel=channel).order_by("-created_at", "-id")
    shared = templates.filter(tenant__isnull=True)
    return [templates.filter(tenant=tenant), shared] if tenant is not None else [shared]


def _pick(scope: QuerySet[MessageTemplate], ref: TemplateRef) -> MessageTemplate | None:
    if ref.rev is None:
        return scope.first()
    exact = scope.filter(rev=ref.rev).first()
    if exact is not None or len(ref.rev) < MIN_REV_PREFIX:
        return exact
    # Compared in Python: LIKE is case-insensitive on SQLite but not on PostgreSQL.
    matches = [t for t in scope.filter(rev__startswith=ref.rev) if t.rev.startswith(ref.rev)]
    if len(matches) > 1:
        revs = "、".join(t.rev for t in matches[:SHOWN_REVS])
        raise RenderError(
            [
                f"テンプレ「{ref}」に当てはまるリビジョンが複数あります（{revs}）。リビジョンを長く書いてください。"
            ]
        )
    return matches[0] if matches else None


def _not_found(tenant: Tenant | None, ref: TemplateRef, channel: str) -> str:
    revs = [t.rev for scope in _scopes(tenant, ref.name, channel) for t in scope.only("rev")]
    if not revs:
        return (
            f"テンプレ「{ref}」が見つかりません（テンプレート「{ref.name}」は取り込まれていません。"
            "manage.py import_templates で取り込んでください）。"
        )
    shown = "、".join([f"{revs[0]}（最新）", *revs[1:SHOWN_REVS]])
    more = f" ほか {len(revs) - SHOWN_REVS} 件" if len(revs) > SHOWN_REVS else ""
    return f"テンプレ「{ref}」が見つかりません（{ref.name} のリビジョン: {shown}{more}）。"


# --- render -----------------------------------------------------------------------


def template_variables(messages: object) -> list[str]:
    """The placeholder names a template uses, in order of first appearance."""
    names: list[str] = []

    def collect(text: str) -> str:
        names.extend(PLACEHOLDER.findall(text))
        return text

    _substitute(messages, collect)
    return list(dict.fromkeys(names))


def render_messages(
    *, messages: list[dict], variables: dict[str, str], attachments: Iterable[Attachment] = ()
) -> list[dict]:
    """A filled copy of `messages` plus one image message per https image 添付.

    Raises RenderError naming every missing variable, every http image URL and
    every LINE limit the result breaks.
    """
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        if match[1] in variables:
            return str(variables[match[1]])
        missing.append(match[1])
        return match[0]

    rendered = _substitute(messages, lambda text: PLACEHOLDER.sub(fill, text))
    images, problems = _attachment_images(attachments)
    problems = [_missing_variable(name) for name in dict.fromkeys(missing)] + problems
    if problems:
        raise RenderError(problems)
    result = rendered + images if isinstance(rendered, list) else rendered
    if problems := validate_line_messages(result):
        raise RenderError(problems)
    return result


def _substitute(value: Any, replace: Callable[[str], str]) -> Any:
    """A new structure with `replace` applied to every string value (never to keys)."""
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_substitute(item, replace) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, replace) for key, item in value.items()}
    return value


def _missing_variable(name: str) -> str:
    return f"変数「{name}」がありません（「## 文面 / 変数」に - {name}: … を書いてください）。"


def _attachment_images(attachments: Iterable[Attachment]) -> tuple[list[dict], list[str]]:
    """Image messages for 添付 image URLs; file names and なし are not sendable and are skipped."""
    images: list[dict] = []
    problems: list[str] = []
    for attachment in attachments:
        url = attachment.value.strip()
        if not _is_image_url(url):
            continue
        if urlsplit(url).scheme.lower() == "https":
            images.append({"type": "image", "originalContentUrl": url, "previewImageUrl": url})
        else:
            problems.append(
                f"添付「{attachment.kind}: {url}」の画像 URL は https で始まる必要があります（LINE は https の画像しか送れません）。"
            )
    return images, problems


def _is_image_url(text: str) -> bool:
    parts = urlsplit(text)
    return (
        parts.scheme.lower() in ("http", "https")
        and bool(parts.netloc)
        and parts.path.lower().endswith(IMAGE_SUFFIXES)
    )


# --- validate ---------------------------------------------------------------------


def validate_line_messages(messages: object) -> list[str]:
    """Problems that would make LINE reject `messages` (pragmatic, not the full spec)."""
    if not isinstance(messages, list):
        return ["メッセージは LINE メッセージオブジェクトの配列（[...]）である必要があります。"]
    problems = []
    if not 1 <= len(messages) <= MAX_MESSAGES:
        problems.append(
            f"メッセージが {len(messages)} 件あります（LINE は 1 回の送信で 1〜{MAX_MESSAGES} 件）。"
        )
    for number, message in enumerate(messages, 1):
        problems += [f"{number} 件目のメッセージ: {problem}" for problem in _message_problems(message)]
    size = _json_size(messages)
    if size > REQUEST_MAX_BYTES - REQUEST_ENVELOPE_BYTES:
        problems.append(
            f"メッセージ全体が {size:,} バイトあります（LINE の 1 回の送信の上限は"
            f" {REQUEST_MAX_BYTES - REQUEST_ENVELOPE_BYTES:,} バイト）。"
        )
    return problems


def _json_size(value: object) -> int:
    """Bytes of `value` as httpx puts it on the wire (compact, UTF-8, not ASCII-escaped)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _message_problems(message: object) -> list[str]:
    if not isinstance(message, dict):
        return ["オブジェクト（{...}）ではありません。"]
    kind = message.get("type")
    if not isinstance(kind, str) or not kind:
        return ["type がありません（text、image など）。"]
    if kind not in MESSAGE_TYPES:
        return [f"type「{kind}」は LINE のメッセージの種類ではありません（{', '.join(MESSAGE_TYPES)}）。"]
    check = _CHECKS.get(kind)
    return check(message) if check else []


def _text(message: dict) -> list[str]:
    text = message.get("text")
    if not isinstance(text, str) or not text.strip():
        return ["text がないか空です。"]
    # Counted in UTF-16 units (third-party: 8x8 docs, UNCONFIRMED by LINE); the stricter count
    # is the safe one.
    length = _utf16_length(text)
    if length > TEXT_MAX:
        return [f"text が {length:,} 文字あります（LINE の上限は {TEXT_MAX:,} 文字）。"]
    return []


def _url(message: dict, key: str) -> list[str]:
    value = message.get(key)
    if not isinstance(value, str) or not value.strip():
        return [f"{key} がありません。"]
    parts = urlsplit(value)
    if parts.scheme.lower() != "https" or not parts.netloc:
        return [f"{key}「{value[:100]}」は https の URL である必要があります。"]
    if len(value) > URL_MAX:
        return [f"{key} が {len(value):,} 文字あります（上限 {URL_MAX:,} 文字）。"]
    return []


def _required(message: dict, *keys: str) -> list[str]:
    return [f"{key} がありません。" for key in keys if message.get(key) in (None, "")]


def _alt_text(message: dict) -> list[str]:
    alt_text = message.get("altText")
    if not isinstance(alt_text, str) or not alt_text.strip():
        return ["altText（通知やトーク一覧に出る代替テキスト）がありません。"]
    if len(alt_text) > ALT_TEXT_MAX:
        return [f"altText が {len(alt_text):,} 文字あります（上限 {ALT_TEXT_MAX:,} 文字）。"]
    return []


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _flex(message: dict) -> list[str]:
    if message.get("contents") in (None, ""):
        return _alt_text(message) + ["contents がありません。"]
    return _alt_text(message) + _flex_container(message["contents"])


def _flex_container(contents: object) -> list[str]:
    kind = contents.get("type") if isinstance(contents, dict) else None
    if kind == "bubble":
        return _size_problems("contents（bubble）", contents, FLEX_BUBBLE_MAX_BYTES)
    if kind != "carousel":
        return ["contents は type が bubble か carousel のオブジェクトである必要があります。"]
    bubbles = contents.get("contents")
    if not isinstance(bubbles, list) or not bubbles:
        return ["carousel の contents（bubble の配列）がありません。"]
    if len(bubbles) > FLEX_CAROUSEL_MAX_BUBBLES:
        return [
            f"carousel に bubble が {len(bubbles)} 個あります（LINE の上限は {FLEX_CAROUSEL_MAX_BUBBLES} 個）。"
        ]
    return _size_problems("contents（carousel）", contents, FLEX_CAROUSEL_MAX_BYTES)


def _size_problems(what: str, value: object, limit: int) -> list[str]:
    size = _json_size(value)
    if size > limit:
        return [
            f"{what}の JSON が {size:,} バイトあります（LINE の上限は {limit // 1000} KB = {limit:,} バイト）。"
        ]
    return []


def _template(message: dict) -> list[str]:
    template = message.get("template")
    if template in (None, ""):
        return _alt_text(message) + ["template がありません。"]
    kind = template.get("type") if isinstance(template, dict) else None
    check = _TEMPLATE_CHECKS.get(kind) if isinstance(kind, str) else None
    if check is None:
        return _alt_text(message) + [
            f"template の type は {'、'.join(_TEMPLATE_CHECKS)} のどれかである必要があります。"
        ]
    return _alt_text(message) + [f"template（{kind}）: {problem}" for problem in check(template)]


def _buttons(template: dict) -> list[str]:
    with_header = bool(template.get("thumbnailImageUrl") or template.get("title"))
    text_max = TEMPLATE_BUTTONS_TEXT_WITH_HEADER_MAX if with_header else TEMPLATE_BUTTONS_TEXT_MAX
    return (
        _optional_url(template, "thumbnailImageUrl")
        + _length(template, "title", TEMPLATE_TITLE_MAX)
        + _length(template, "text", text_max, required=True)
        + _count(template, "actions", TEMPLATE_BUTTONS_ACTIONS_MAX)
    )


def _confirm(template: dict) -> list[str]:
    return _length(template, "text", TEMPLATE_CONFIRM_TEXT_MAX, required=True) + _count(
        template, "actions", TEMPLATE_CONFIRM_ACTIONS_MAX
    )


def _columns(template: dict, column_problems: Callable[[dict], list[str]]) -> list[str]:
    columns = template.get("columns")
    if not isinstance(columns, list) or not columns:
        return ["columns（列の配列）がありません。"]
    if len(columns) > TEMPLATE_COLUMNS_MAX:
        return [f"columns が {len(columns)} 列あります（LINE の上限は {TEMPLATE_COLUMNS_MAX} 列）。"]
    problems = []
    for number, column in enumerate(columns, 1):
        found = (
            column_problems(column) if isinstance(column, dict) else ["オブジェクト（{...}）ではありません。"]
        )
        problems += [f"{number} 列目: {problem}" for problem in found]
    return problems


def _carousel_column(column: dict) -> list[str]:
    with_header = bool(column.get("thumbnailImageUrl") or column.get("title"))
    text_max = TEMPLATE_COLUMN_TEXT_WITH_HEADER_MAX if with_header else TEMPLATE_COLUMN_TEXT_MAX
    return (
        _optional_url(column, "thumbnailImageUrl")
        + _length(column, "title", TEMPLATE_TITLE_MAX)
        + _length(column, "text", text_max, required=True)
        + _count(column, "actions", TEMPLATE_COLUMN_ACTIONS_MAX)
    )


def _image_column(column: dict) -> list[str]:
    return _url(column, "imageUrl") + _required(column, "action")


def _optional_url(obj: dict, key: str) -> list[str]:
    return _url(obj, key) if obj.get(key) not in (None, "") else []


def _length(obj: dict, key: str, limit: int, *, required: bool = False) -> list[str]:
    value = obj.get(key)
    if value in (None, ""):
        return [f"{key} がありません。"] if required else []
    if not isinstance(value, str):
        return [f"{key} は文字列である必要があります。"]
    if (length := _utf16_length(value)) > limit:
        return [f"{key} が {length:,} 文字あります（LINE の上限は {limit:,} 文字）。"]
    return []


def _count(obj: dict, key: str, limit: int) -> list[str]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        return [f"{key} は配列である必要があります。"]
    if len(value) > limit:
        return [f"{key} が {len(value)} 個あります（LINE の上限は {limit} 個）。"]
    return []


def _media(message: dict) -> list[str]:
    return _url(message, "originalContentUrl") + _url(message, "previewImageUrl")


def _audio(message: dict) -> list[str]:
    return _url(message, "originalContentUrl") + _required(message, "duration")


_TEMPLATE_CHECKS: dict[str, Callable[[dict], list[str]]] = {
    "buttons": _buttons,
    "confirm": _confirm,
    "carousel": lambda t: _columns(t, _carousel_column),
    "image_carousel": lambda t: _columns(t, _image_column),
}

_CHECKS: dict[str, Callable[[dict], list[str]]] = {
    "text": _text,
    "textV2": _text,
    "image": _media,
    "video": _media,
    "audio": _audio,
    "sticker": lambda m: _required(m, "packageId", "stickerId"),
    "location": lambda m: _required(m, "title", "address", "latitude", "longitude"),
    "flex": _flex,
    "template": _template,
    "imagemap": lambda m: _alt_text(m) + _url(m, "baseUrl") + _required(m, "baseSize", "actions"),
    "coupon": lambda m: _required(m, "couponId"),
}


# --- import -----------------------------------------------------------------------


def template_rev(messages: list) -> str:
    canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def template_import(
    *, directory: Path, tenant: Tenant | None = None, channel: str = "line"
) -> list[ImportResult]:
    """Import every NAME.json in `directory` (sorted); a bad file never stops the others.

    A file whose content is already stored under that name (same rev) makes no new
    row and reports created=False. That includes a file reverted to an OLDER
    revision: revisions are immutable and unique per (tenant, name, rev), so the
    old row cannot become "latest" again; `latest_rev` then names the revision that
    `name` alone still resolves to, and `name@rev` picks the reverted content.
    """
    paths = sorted(p for p in Path(directory).glob("*.json") if p.is_file())
    return [_import_file(path, tenant, channel) for path in paths]


def _import_file(path: Path, tenant: Tenant | None, channel: str) -> ImportResult:
    name = path.stem
    try:
        messages = _load_template(path, channel)
    except ValueError as exc:
        return ImportResult(name=name, error=str(exc))
    return _store(name, messages, tenant, channel, source=str(path))


def _load_template(path: Path, channel: str = "line") -> list | dict:
    if problem := _name_problem(path.stem):
        raise ValueError(problem)
    try:
        messages = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise ValueError("UTF-8 のテキストとして読めません。") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"JSON として読めません（{exc.lineno} 行 {exc.colno} 列: {exc.msg}）。") from None
    if problems := _template_problems(messages, channel):
        raise ValueError(" ".join(problems))
    return messages


def _template_problems(messages: object, channel: str) -> list[str]:
    if channel == "line":
        return validate_line_messages(_with_samples(messages))
    # Instagram / TikTok / HubSpot templates are one JSON object each (channel_templates.py).
    from deliveries.channel_templates import validate_channel_template, with_samples

    return validate_channel_template(channel, with_samples(messages))


def _name_problem(name: str) -> str | None:
    if len(name) > MessageTemplate._meta.get_field("name").max_length:
        return "ファイル名（テンプレート名）が長すぎます。"
    try:
        ref = TemplateRef.parse(name)
    except ValueError as exc:
        return str(exc)
    return None if ref.rev is None and ref.name == name else "ファイル名に @ や全角英数字は使えません。"


def _with_samples(messages: object) -> object:
    """A copy to validate the structure of: a leading placeholder stands for an https URL."""

    def sample(text: str) -> str:
        text = PLACEHOLDER.sub(SAMPLE_URL, text, count=1) if PLACEHOLDER.match(text) else text
        return PLACEHOLDER.sub(SAMPLE_TEXT, text)

    return _substitute(messages, sample)


def _store(name: str, messages: list, tenant: Tenant | None, channel: str, *, source: str) -> ImportResult:
    rev = template_rev(messages)
    if not MessageTemplate.objects.filter(tenant=tenant, name=name, rev=rev).exists():
        try:
            with transaction.atomic():
                MessageTemplate.objects.create(
                    tenant=tenant, name=name, rev=rev, channel=channel, messages=messages, source=source
                )
            return ImportResult(name=name, rev=rev, created=True)
        except IntegrityError:
            pass  # a concurrent import stored the same revision first
    latest = (
        MessageTemplate.objects.filter(tenant=tenant, name=name, channel=channel)
        .order_by("-created_at", "-id")
        .first()
    )
    newer = latest.rev if latest is not None and latest.rev != rev else None
    return ImportResult(name=name, rev=rev, created=False, latest_rev=newer)

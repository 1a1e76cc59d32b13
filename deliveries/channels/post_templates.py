"""Templates of the Instagram, TikTok and HubSpot channels: validate and fill.

A template is one JSON object whose strings may hold `{{ variable }}` placeholders, filled
from the issue's 文面 / 変数 (LINE's are arrays of messages: line/templates.py). It is checked when
imported, with samples in the placeholders, and again once filled, before anything is sent.
Each channel's shapes and limits are `KINDS` in deliveries/channels/<kind>/templates.py; a
problem names its field, in Japanese, because it is posted to the Backlog issue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from core.channels import channel_label
from deliveries.channels.placeholders import RenderError, placeholders_fill
from deliveries.channels.registry import channel_part

URL_MAX = 2000
SAMPLE_URL = "https://example.com/sample.jpg"

Problems = list[str]
Check = Callable[[dict], Problems]
Kinds = dict[str, tuple[set[str], Check]]  # type → (its fields, its check)


def validate_channel_template(channel: str, content: object) -> Problems:
    """Every problem of a template (filled or with samples), each naming its field."""
    return channel_part(channel, "templates").validate(content)


def kinds_problems(channel: str, kinds: Kinds, content: object) -> Problems:
    if not isinstance(content, dict):
        return [
            f"{channel_label(channel)} のテンプレートは JSON オブジェクト（{{...}}）である必要があります。"
        ]
    kind = content.get("type")
    if kind not in kinds:
        return [f"type は {' / '.join(kinds)} のどれかにしてください（今: {kind!r}）。"]
    allowed, check = kinds[kind]
    unknown = [
        f"{key} は {channel} の {kind} テンプレートでは使えない項目です。"
        for key in content
        if key not in allowed | {"type"}
    ]
    return unknown + check(content)


def render_channel_template(channel: str, content: dict, variables: dict[str, str]) -> dict:
    """A filled copy of the template; RenderError names every missing variable and bad field."""
    rendered, missing = placeholders_fill(content, variables)
    if missing:
        raise RenderError(missing)
    if problems := validate_channel_template(channel, rendered):
        raise RenderError(problems)
    return rendered


def describe(channel: str, content: dict[str, Any]) -> str:
    """One line for people (preview, logs): what the post is."""
    text = channel_part(channel, "templates").describe_text(content)
    return f"{channel_label(channel)} {content.get('type')}: {text[:100]}"


def html_fields(channel: str) -> tuple[str, ...]:
    """The fields of a post that hold HTML (a HubSpot note's body), drawn as text in a preview."""
    return channel_part(channel, "templates").HTML_FIELDS


# -- field checks ---------------------------------------------------------------------


def text_field(
    content: dict, key: str, limit: int, *, required: bool = True, utf16: bool = False
) -> Problems:
    value = content.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, str):
        return [f"{key} がないか文字列ではありません。"]
    if required and not value.strip():
        return [f"{key} が空です。"]
    length = len(value.encode("utf-16-le")) // 2 if utf16 else len(value)
    return [f"{key} が {length:,} 文字あります（上限 {limit:,} 文字）。"] if length > limit else []


def url_field(value: object, name: str) -> Problems:
    if not isinstance(value, str) or not value.strip():
        return [f"{name} がありません。"]
    try:
        parts = urlsplit(value)
    except ValueError:  # an unbalanced [ in the host
        parts = None
    if parts is None or parts.scheme.lower() != "https" or not parts.netloc:
        return [f"{name}「{value[:100]}」は https の公開 URL である必要があります。"]
    return [f"{name} が長すぎます（上限 {URL_MAX:,} 文字）。"] if len(value) > URL_MAX else []


def optional_url_field(content: dict, key: str) -> Problems:
    return url_field(content[key], key) if key in content else []


def bool_fields(content: dict, *keys: str) -> Problems:
    return [
        f"{key} は true / false で指定してください。"
        for key in keys
        if key in content and not isinstance(content[key], bool)
    ]


def int_field(content: dict, key: str, *, low: int = 0, high: int | None = None) -> Problems:
    if key not in content:
        return []
    value = content[key]
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"{low}〜{high}" if high is not None else f"{low} 以上"
        return [f"{key} は {bound} の整数で指定してください（今: {value!r}）。"]
    return []


def count_field(items: object, key: str, bounds: tuple[int, int]) -> Problems:
    if not isinstance(items, list) or not bounds[0] <= len(items) <= bounds[1]:
        size = len(items) if isinstance(items, list) else "0"
        return [f"{key} は {bounds[0]}〜{bounds[1]} 件の配列にしてください（今: {size} 件）。"]
    return []

"""Templates of the Instagram, TikTok and HubSpot channels: validate and fill.

The shared part: filling, the field checks and the dispatch; each channel's kinds and
limits are deliveries/channels/<kind>/templates.py.

A template is one JSON object (LINE's are arrays of message objects, see rendering.py);
its strings may hold `{{ variable }}` placeholders filled from the issue's 文面 / 変数.
It is validated when imported (placeholders replaced by samples) and again, filled,
before anything is sent; every problem names the field, in Japanese, because it is
posted to the Backlog issue.

    instagram  {"type": "image", "caption", "image_url", "alt_text"?}
               {"type": "reel", "caption", "video_url", "cover_url"?, "share_to_feed"?}
               {"type": "carousel", "caption", "items": [{"image_url"} | {"video_url"}, …]}
    tiktok     {"type": "video", "title", "video_url", "privacy_level", "disable_comment"?,
                "disable_duet"?, "disable_stitch"?, "video_cover_timestamp_ms"?}
               {"type": "photo", "title", "photo_urls": […], "photo_cover_index"?, "description"?,
                "privacy_level", "disable_comment"?, "auto_add_music"?}
    hubspot    {"type": "note", "body"}
               {"type": "email", "email_id", "custom_properties"?: {name: value}}

Limits: Instagram carousels up to 10 items (quoted in public code from
https://developers.facebook.com/docs/instagram-platform/content-publishing/, UNCONFIRMED)
and media fetched from public URLs (same page); TikTok titles up to 2,200 UTF-16 units
(https://developers.tiktok.com/doc/content-posting-api-reference-direct-post), privacy
levels from `creator_info` (https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info/),
photos up to 35 (third-party: https://docs.getlate.dev/resources/media-guidelines/tiktok,
UNCONFIRMED); HubSpot note bodies up to 65,536 characters
(https://developers.hubspot.com/docs/api-reference/crm-notes-v3/guide). Instagram's
2,200-character caption limit is Meta's help-centre figure (UNCONFIRMED).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from deliveries.channels.registry import channel_part
from deliveries.channels.templating import RenderError, placeholders_fill
from deliveries.models import CHANNEL_LABELS

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
            f"{CHANNEL_LABELS[channel]} のテンプレートは JSON オブジェクト（{{...}}）である必要があります。"
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
    return f"{CHANNEL_LABELS[channel]} {content.get('type')}: {text[:100]}"


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
    parts = urlsplit(value)
    if parts.scheme.lower() != "https" or not parts.netloc:
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

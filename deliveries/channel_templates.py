"""Templates of the Instagram, TikTok and HubSpot channels: validate and fill.

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

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from backlog_bridge.parser import PLATFORM_CHANNELS
from deliveries.rendering import PLACEHOLDER, RenderError, _missing_variable, _substitute

CHANNELS = PLATFORM_CHANNELS
CAPTION_MAX = 2200
CAROUSEL_ITEMS = (2, 10)
TIKTOK_TITLE_MAX = 2200
TIKTOK_PHOTOS = (1, 35)
PRIVACY_LEVELS = ("PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY")
NOTE_BODY_MAX = 65_536
URL_MAX = 2000
SAMPLE_URL = "https://example.com/sample.jpg"
SAMPLE_TEXT = "x"

Problems = list[str]


def validate_channel_template(channel: str, content: object) -> Problems:
    """Every problem of a template (filled or with samples), each naming its field."""
    if not isinstance(content, dict):
        return [f"{_label(channel)} のテンプレートは JSON オブジェクト（{{...}}）である必要があります。"]
    kinds = _KINDS[channel]
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
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        if match[1] in variables:
            return str(variables[match[1]])
        missing.append(match[1])
        return match[0]

    rendered = _substitute(content, lambda text: PLACEHOLDER.sub(fill, text))
    if missing:
        raise RenderError([_missing_variable(name) for name in dict.fromkeys(missing)])
    if problems := validate_channel_template(channel, rendered):
        raise RenderError(problems)
    return rendered


def with_samples(content: object) -> object:
    """A copy to validate at import: a leading placeholder stands for a URL, others for text."""

    def sample(text: str) -> str:
        text = PLACEHOLDER.sub(SAMPLE_URL, text, count=1) if PLACEHOLDER.match(text) else text
        return PLACEHOLDER.sub(SAMPLE_TEXT, text)

    return _substitute(content, sample)


# -- field checks ---------------------------------------------------------------------


def _label(channel: str) -> str:
    return {"instagram": "Instagram", "tiktok": "TikTok", "hubspot": "HubSpot"}.get(channel, channel)


def _text(content: dict, key: str, limit: int, *, required: bool = True, utf16: bool = False) -> Problems:
    value = content.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, str):
        return [f"{key} がないか文字列ではありません。"]
    if required and not value.strip():
        return [f"{key} が空です。"]
    length = len(value.encode("utf-16-le")) // 2 if utf16 else len(value)
    return [f"{key} が {length:,} 文字あります（上限 {limit:,} 文字）。"] if length > limit else []


def _url(value: object, name: str) -> Problems:
    if not isinstance(value, str) or not value.strip():
        return [f"{name} がありません。"]
    parts = urlsplit(value)
    if parts.scheme.lower() != "https" or not parts.netloc:
        return [f"{name}「{value[:100]}」は https の公開 URL である必要があります。"]
    return [f"{name} が長すぎます（上限 {URL_MAX:,} 文字）。"] if len(value) > URL_MAX else []


def _optional_url(content: dict, key: str) -> Problems:
    return _url(content[key], key) if key in content else []


def _bools(content: dict, *keys: str) -> Problems:
    return [
        f"{key} は true / false で指定してください。"
        for key in keys
        if key in content and not isinstance(content[key], bool)
    ]


def _int(content: dict, key: str, *, low: int = 0, high: int | None = None) -> Problems:
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


def _count(items: object, key: str, bounds: tuple[int, int]) -> Problems:
    if not isinstance(items, list) or not bounds[0] <= len(items) <= bounds[1]:
        size = len(items) if isinstance(items, list) else "0"
        return [f"{key} は {bounds[0]}〜{bounds[1]} 件の配列にしてください（今: {size} 件）。"]
    return []


# -- Instagram ------------------------------------------------------------------------


def _ig_image(content: dict) -> Problems:
    return (
        _text(content, "caption", CAPTION_MAX, required=False)
        + _url(content.get("image_url"), "image_url")
        + (_text(content, "alt_text", 1000, required=False))
    )


def _ig_reel(content: dict) -> Problems:
    return (
        _text(content, "caption", CAPTION_MAX, required=False)
        + _url(content.get("video_url"), "video_url")
        + _optional_url(content, "cover_url")
        + _bools(content, "share_to_feed")
    )


def _ig_carousel(content: dict) -> Problems:
    items = content.get("items")
    problems = _text(content, "caption", CAPTION_MAX, required=False) + _count(items, "items", CAROUSEL_ITEMS)
    for number, item in enumerate(items if isinstance(items, list) else [], 1):
        problems += [f"items の {number} 件目: {p}" for p in _carousel_item(item)]
    return problems


def _carousel_item(item: object) -> Problems:
    if (
        not isinstance(item, dict)
        or len(set(item) & {"image_url", "video_url"}) != 1
        or set(item) - {"image_url", "video_url"}
    ):
        return ["image_url か video_url のどちらか 1 つだけを持つオブジェクトにしてください。"]
    key = "image_url" if "image_url" in item else "video_url"
    return _url(item[key], key)


# -- TikTok ---------------------------------------------------------------------------


def _privacy(content: dict) -> Problems:
    level = content.get("privacy_level")
    if level not in PRIVACY_LEVELS:
        return [
            f"privacy_level は {' / '.join(PRIVACY_LEVELS)} のどれかにしてください（今: {level!r}）。"
            "審査前の TikTok アプリでは SELF_ONLY しか使えません。"
        ]
    return []


def _tt_video(content: dict) -> Problems:
    return (
        _text(content, "title", TIKTOK_TITLE_MAX, required=False, utf16=True)
        + _url(content.get("video_url"), "video_url")
        + _privacy(content)
        + _bools(content, "disable_comment", "disable_duet", "disable_stitch")
        + _int(content, "video_cover_timestamp_ms")
    )


def _tt_photo(content: dict) -> Problems:
    photos = content.get("photo_urls")
    problems = _text(content, "title", TIKTOK_TITLE_MAX, required=False, utf16=True) + _count(
        photos, "photo_urls", TIKTOK_PHOTOS
    )
    for number, url in enumerate(photos if isinstance(photos, list) else [], 1):
        problems += [f"photo_urls の {number} 件目: {p}" for p in _url(url, "URL")]
    last = max(len(photos) - 1, 0) if isinstance(photos, list) else 0
    return (
        problems
        + _int(content, "photo_cover_index", high=last)
        + _text(content, "description", 4000, required=False, utf16=True)
        + _privacy(content)
        + _bools(content, "disable_comment", "auto_add_music")
    )


# -- HubSpot --------------------------------------------------------------------------


def _hs_note(content: dict) -> Problems:
    return _text(content, "body", NOTE_BODY_MAX)


def _hs_email(content: dict) -> Problems:
    email_id = content.get("email_id")
    problems = []
    if isinstance(email_id, bool) or not (isinstance(email_id, int) and email_id > 0):
        problems.append(
            f"email_id は HubSpot のメール ID（正の整数）で指定してください（今: {email_id!r}）。"
        )
    props = content.get("custom_properties", {})
    if not isinstance(props, dict) or not all(isinstance(v, str | int | float) for v in props.values()):
        problems.append("custom_properties は {名前: 値} のオブジェクト（値は文字列か数値）にしてください。")
    return problems


_Check = Callable[[dict], Problems]
_KINDS: dict[str, dict[str, tuple[set[str], _Check]]] = {
    "instagram": {
        "image": ({"caption", "image_url", "alt_text"}, _ig_image),
        "reel": ({"caption", "video_url", "cover_url", "share_to_feed"}, _ig_reel),
        "carousel": ({"caption", "items"}, _ig_carousel),
    },
    "tiktok": {
        "video": (
            {
                "title",
                "video_url",
                "privacy_level",
                "disable_comment",
                "disable_duet",
                "disable_stitch",
                "video_cover_timestamp_ms",
            },
            _tt_video,
        ),
        "photo": (
            {
                "title",
                "photo_urls",
                "photo_cover_index",
                "description",
                "privacy_level",
                "disable_comment",
                "auto_add_music",
            },
            _tt_photo,
        ),
    },
    "hubspot": {
        "note": ({"body"}, _hs_note),
        "email": ({"email_id", "custom_properties"}, _hs_email),
    },
}


def describe(channel: str, content: dict[str, Any]) -> str:
    """One line for people (preview, logs): what the post is."""
    kind = content.get("type")
    if channel == "instagram":
        text = content.get("caption", "")
    elif channel == "tiktok":
        text = content.get("title", "")
    else:
        text = content.get("body", "") if kind == "note" else f"email_id {content.get('email_id')}"
    return f"{_label(channel)} {kind}: {text[:100]}"

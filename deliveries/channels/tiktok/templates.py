"""TikTok's template rules: its shapes are `KINDS` below, each with its check.

The privacy level and the interactions are not the template's: TikTok's guidelines leave
them to the person posting, so the issue body states them (deliveries/channels/tiktok/choices.py).
"""

from __future__ import annotations

from deliveries.channels.placeholders import with_samples
from deliveries.channels.post_templates import (
    SAMPLE_URL,
    Kinds,
    Problems,
    bool_fields,
    count_field,
    int_field,
    kinds_problems,
    text_field,
    url_field,
)

# Video titles in UTF-16 units (https://developers.tiktok.com/doc/content-posting-api-reference-direct-post).
TIKTOK_TITLE_MAX = 2200
# Photo posts (https://developers.tiktok.com/doc/content-posting-api-reference-photo-post): the
# title's "maximum length for photo posts is 90 in UTF-16 runes", the description's 4000, and
# `photo_images` (required) is "an array containing up to 35 photo content URLs".
TIKTOK_PHOTO_TITLE_MAX = 90
TIKTOK_PHOTO_DESCRIPTION_MAX = 4000
TIKTOK_PHOTOS = (1, 35)
# Choices the issue body states (「## 配信メタ」), never a template.
BODY_CHOICES = {
    "privacy_level": "公開範囲",
    "disable_comment": "コメント",
    "disable_duet": "デュエット",
    "disable_stitch": "スティッチ",
}

HTML_FIELDS = ()


def validate(content: object) -> Problems:
    """Every problem of a filled template (or of one with samples), each naming its field."""
    return kinds_problems("tiktok", KINDS, content)


def template_problems(content: object) -> Problems:
    """What is wrong with a template file being imported (placeholders stand for samples)."""
    return validate(with_samples(content, url=SAMPLE_URL))


def describe_text(content: dict) -> str:
    return content.get("title", "")


def _no_choices(content: dict) -> Problems:
    return [
        f"{key} はテンプレには書けません。課題本文の「## 配信メタ」に「- {label}: …」と書いてください"
        "（TikTok の規約により、公開範囲や操作の許可を前もって決めておくことはできません）。"
        for key, label in BODY_CHOICES.items()
        if key in content
    ]


def _tt_video(content: dict) -> Problems:
    return (
        text_field(content, "title", TIKTOK_TITLE_MAX, required=False, utf16=True)
        + url_field(content.get("video_url"), "video_url")
        + _no_choices(content)
        + int_field(content, "video_cover_timestamp_ms")
    )


def _tt_photo(content: dict) -> Problems:
    photos = content.get("photo_urls")
    problems = text_field(content, "title", TIKTOK_PHOTO_TITLE_MAX, required=False, utf16=True) + count_field(
        photos, "photo_urls", TIKTOK_PHOTOS
    )
    for number, url in enumerate(photos if isinstance(photos, list) else [], 1):
        problems += [f"photo_urls の {number} 件目: {p}" for p in url_field(url, "URL")]
    last = max(len(photos) - 1, 0) if isinstance(photos, list) else 0
    return (
        problems
        + int_field(content, "photo_cover_index", high=last)
        + text_field(content, "description", TIKTOK_PHOTO_DESCRIPTION_MAX, required=False, utf16=True)
        + _no_choices(content)
        + bool_fields(content, "auto_add_music")
    )


KINDS: Kinds = {
    "video": (
        {"title", "video_url", "video_cover_timestamp_ms", *BODY_CHOICES},
        _tt_video,
    ),
    "photo": (
        {"title", "photo_urls", "photo_cover_index", "description", "auto_add_music", *BODY_CHOICES},
        _tt_photo,
    ),
}

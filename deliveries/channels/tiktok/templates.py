"""TikTok's template rules (shapes in deliveries/channel_templates.py).

Titles up to 2,200 UTF-16 units (https://developers.tiktok.com/doc/content-posting-api-reference-direct-post),
privacy levels from `creator_info` (https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info/),
photos up to 35 (third-party: https://docs.getlate.dev/resources/media-guidelines/tiktok, UNCONFIRMED).
"""

from __future__ import annotations

from deliveries.channel_templates import (
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
from deliveries.templating import with_samples

TIKTOK_TITLE_MAX = 2200
TIKTOK_PHOTOS = (1, 35)
PRIVACY_LEVELS = ("PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY")


def validate(content: object) -> Problems:
    """Every problem of a filled template (or of one with samples), each naming its field."""
    return kinds_problems("tiktok", KINDS, content)


def template_problems(content: object) -> Problems:
    """What is wrong with a template file being imported (placeholders stand for samples)."""
    return validate(with_samples(content, url=SAMPLE_URL))


def describe_text(content: dict) -> str:
    return content.get("title", "")


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
        text_field(content, "title", TIKTOK_TITLE_MAX, required=False, utf16=True)
        + url_field(content.get("video_url"), "video_url")
        + _privacy(content)
        + bool_fields(content, "disable_comment", "disable_duet", "disable_stitch")
        + int_field(content, "video_cover_timestamp_ms")
    )


def _tt_photo(content: dict) -> Problems:
    photos = content.get("photo_urls")
    problems = text_field(content, "title", TIKTOK_TITLE_MAX, required=False, utf16=True) + count_field(
        photos, "photo_urls", TIKTOK_PHOTOS
    )
    for number, url in enumerate(photos if isinstance(photos, list) else [], 1):
        problems += [f"photo_urls の {number} 件目: {p}" for p in url_field(url, "URL")]
    last = max(len(photos) - 1, 0) if isinstance(photos, list) else 0
    return (
        problems
        + int_field(content, "photo_cover_index", high=last)
        + text_field(content, "description", 4000, required=False, utf16=True)
        + _privacy(content)
        + bool_fields(content, "disable_comment", "auto_add_music")
    )


KINDS: Kinds = {
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
}

"""Instagram's template rules: its shapes are `KINDS` below, each with its check.

Checked at approval and again before the first platform call (deliveries/approve/checks.py,
deliveries/channels/posts.py).
"""

from __future__ import annotations

import re

from deliveries.channels.placeholders import with_samples
from deliveries.channels.post_templates import (
    SAMPLE_URL,
    Kinds,
    Problems,
    bool_fields,
    count_field,
    kinds_problems,
    optional_url_field,
    text_field,
    url_field,
)

# The `caption` parameter's limits in Meta's IG User Media reference
# (https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media;
# UNCONFIRMED against the current page: third parties report lower hashtag limits, which
# would still fail at publish time).
CAPTION_MAX = 2200
CAPTION_HASHTAGS_MAX = 30
CAPTION_MENTIONS_MAX = 20
HASHTAG = re.compile(r"#\w+")
MENTION = re.compile(r"(?<![\w@])@[\w.]+")
# A carousel is a post "containing multiple images and videos"
# (https://developers.facebook.com/docs/instagram-platform/content-publishing/); its `children`
# are "up to 10 container IDs" ("Carousels can have up to 10 total images, videos, or a mix",
# https://developers.facebook.com/docs/instagram-api/reference/ig-user/media).
CAROUSEL_ITEMS = (2, 10)

HTML_FIELDS = ()


def validate(content: object) -> Problems:
    """Every problem of a filled template (or of one with samples), each naming its field."""
    return kinds_problems("instagram", KINDS, content)


def template_problems(content: object) -> Problems:
    """What is wrong with a template file being imported (placeholders stand for samples)."""
    return validate(with_samples(content, url=SAMPLE_URL))


def describe_text(content: dict) -> str:
    return content.get("caption", "")


def _caption(content: dict) -> Problems:
    problems = text_field(content, "caption", CAPTION_MAX, required=False)
    caption = content.get("caption")
    if problems or not isinstance(caption, str):
        return problems
    for pattern, limit, label in (
        (HASHTAG, CAPTION_HASHTAGS_MAX, "ハッシュタグ"),
        (MENTION, CAPTION_MENTIONS_MAX, "メンション（@）"),
    ):
        count = len(pattern.findall(caption))
        if count > limit:
            problems.append(f"caption の{label}が多すぎます（{count} 個、上限 {limit} 個）。")
    return problems


def _ig_image(content: dict) -> Problems:
    return (
        _caption(content)
        + url_field(content.get("image_url"), "image_url")
        + (text_field(content, "alt_text", 1000, required=False))
    )


def _ig_reel(content: dict) -> Problems:
    return (
        _caption(content)
        + url_field(content.get("video_url"), "video_url")
        + optional_url_field(content, "cover_url")
        + bool_fields(content, "share_to_feed")
    )


def _ig_carousel(content: dict) -> Problems:
    items = content.get("items")
    problems = _caption(content) + count_field(items, "items", CAROUSEL_ITEMS)
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
    return url_field(item[key], key)


KINDS: Kinds = {
    "image": ({"caption", "image_url", "alt_text"}, _ig_image),
    "reel": ({"caption", "video_url", "cover_url", "share_to_feed"}, _ig_reel),
    "carousel": ({"caption", "items"}, _ig_carousel),
}

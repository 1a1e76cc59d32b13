"""The preview page: LINE message objects drawn as what recipients see (chat bubbles).

Each message object of the Messaging API (text, image, video, audio, sticker,
location, imagemap, template, flex) becomes one bubble; the raw JSON stays one
click away on the page. An Instagram / TikTok / HubSpot task is one post instead,
drawn as a post card: its media, its text, and its other fields.
"""

from __future__ import annotations

import json

from django.utils import timezone
from django.utils.translation import gettext as _

from console.preview_images import image
from console.services import ACTION_ERRORS, IssueMissing, task_preview
from console.task_state import task_state
from core.access import may_act
from core.channels import channel_label
from deliveries.channels.post_templates import html_fields
from deliveries.channels.preview_base import post_fields, post_kind
from deliveries.models import ContentTask

MAX_FLEX_TEXTS = 12


def preview_page(*, task: ContentTask, user) -> dict:
    """The template context: the preview, its bubbles and JSON, or the error that stopped it;
    whether the user may act on the task (テスト配信); the model's options, as the admin's."""
    return {**_page(task), "may_act": may_act(user, task.tenant_id), "opts": task._meta}


def _page(task: ContentTask) -> dict:
    try:
        preview = task_preview(task=task)
    except IssueMissing:
        return {"task": task, "error": _("Backlog にこの課題がありません（削除された可能性があります）。")}
    except ACTION_ERRORS as exc:
        return {"task": task, "error": _("Backlog から課題を読めませんでした: %(error)s") % {"error": exc}}
    state = task_state(task=task, now=timezone.now(), due_at=preview.due_at)
    hosts = task.tenant.image_hosts()
    if preview.is_post:
        return {
            "task": task,
            "preview": preview,
            "state": state,
            "channel_label": channel_label(preview.channel),
            "card": post_card(preview.channel, preview.post, hosts) if preview.post is not None else None,
            "raw_json": json.dumps(preview.post, ensure_ascii=False, indent=2),
        }
    return {
        "task": task,
        "preview": preview,
        "state": state,
        "bubbles": [bubble(m, hosts) for m in preview.messages],
        # Under each bubble, when it reaches the phone: sent, scheduled, or sent if approved now.
        "sent_at": task.delivered_at or preview.due_at,
        "raw_json": json.dumps(preview.messages, ensure_ascii=False, indent=2),
    }


TEXT_FIELDS = ("caption", "title", "body")  # the post's main text, drawn under its media
MEDIA_FIELDS = ("image_url", "video_url", "items", "photo_urls")


def post_card(channel: str, content: dict, hosts: frozenset[str] = frozenset()) -> dict:
    """An Instagram / TikTok post or a HubSpot note / email as a card: media, text, other fields.
    Images load at once only from `hosts` (console/preview_images.py)."""
    media = [m for key in MEDIA_FIELDS for m in _media(key, content.get(key), hosts)]
    if content.get("cover_url") and media:
        media[0]["poster"] = image(content["cover_url"], hosts)
    key = next((k for k in TEXT_FIELDS if content.get(k)), "")
    return {
        "kind": post_kind(channel, content),
        "text": str(content[key]) if key else "",
        "html": key in html_fields(channel),  # drawn as its text, without the markup
        "media": media,
        "fields": post_fields(content, leave_out=(*TEXT_FIELDS, *MEDIA_FIELDS)),
    }


def _media(key: str, value: object, hosts: frozenset[str]) -> list[dict]:
    """Carousel items ({"image_url"} / {"video_url"}) and TikTok photos (URLs) are lists."""
    if isinstance(value, list):
        return [m for item in value for m in _media_item(item, hosts)]
    if not isinstance(value, str):
        return []
    kind = "video" if key == "video_url" else "image"
    # A video's URL is named, never loaded: only an image is drawn.
    return [{"kind": kind, "src": image(value, hosts) if kind == "image" else None, "url": value}]


def _media_item(item: object, hosts: frozenset[str]) -> list[dict]:
    if isinstance(item, dict) and item:
        return _media(*next(iter(item.items())), hosts)
    return _media("image_url", item, hosts)


def bubble(message: dict, hosts: frozenset[str] = frozenset()) -> dict:
    """One LINE message as a bubble; its images load at once only from `hosts`
    (console/preview_images.py), the others on a click."""
    kind = message.get("type")
    drawn = DRAW.get(kind, _other)(message, hosts) if isinstance(kind, str) else _other(message, hosts)
    drawn["quick_replies"] = _labels(_dict(message.get("quickReply")).get("items"))
    return drawn


def _dict(value: object) -> dict:
    """A part of a message, if it is an object: a stored post may hold anything LINE's
    checks at queueing did not look into, and its page must still draw."""
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _labels(items: object) -> list[str]:
    return [str(_dict(i.get("action")).get("label") or "") for i in _list(items) if isinstance(i, dict)]


def _text(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "text", "text": m.get("text", "")}


def _image(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "image", "src": image(m.get("previewImageUrl") or m.get("originalContentUrl"), hosts)}


def _video(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "video", "src": image(m.get("previewImageUrl"), hosts)}


def _audio(m: dict, hosts: frozenset[str]) -> dict:
    duration = m.get("duration")
    seconds = duration // 1000 if isinstance(duration, int) and not isinstance(duration, bool) else 0
    return {"kind": "audio", "seconds": seconds}


def _sticker(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "sticker", "label": f"{m.get('packageId', '?')} / {m.get('stickerId', '?')}"}


def _location(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "location", "title": m.get("title", ""), "text": m.get("address", "")}


def _imagemap(m: dict, hosts: frozenset[str]) -> dict:
    base = m.get("baseUrl")
    return {
        "kind": "image",
        "src": image(f"{base}/1040" if base else None, hosts),
        "alt": m.get("altText", ""),
    }


def _template(m: dict, hosts: frozenset[str]) -> dict:
    template = _dict(m.get("template"))
    columns = _list(template.get("columns")) or [template]
    cards = [_card(c, hosts) for c in columns if isinstance(c, dict)]
    return {"kind": "cards", "alt": m.get("altText", ""), "cards": cards}


def _card(column: dict, hosts: frozenset[str]) -> dict:
    actions = _list(column.get("actions")) or [column.get("action")]
    return {
        "image": image(column.get("thumbnailImageUrl") or column.get("imageUrl"), hosts),
        "title": column.get("title", ""),
        "text": column.get("text", ""),
        "actions": [str(a.get("label") or "") for a in actions if isinstance(a, dict)],
    }


def _flex(m: dict, hosts: frozenset[str]) -> dict:
    texts: list[str] = []
    _collect_texts(m.get("contents"), texts)
    return {"kind": "flex", "alt": m.get("altText", ""), "texts": texts[:MAX_FLEX_TEXTS]}


def _collect_texts(node: object, out: list[str]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "text" and node.get("text"):
            out.append(str(node["text"]))
        for value in node.values():
            _collect_texts(value, out)
    elif isinstance(node, list):
        for value in node:
            _collect_texts(value, out)


def _coupon(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "coupon", "text": str(m.get("couponId") or "")}


def _other(m: dict, hosts: frozenset[str]) -> dict:
    return {"kind": "other", "text": str(m.get("type") or "?")}


DRAW = {
    "text": _text,
    "image": _image,
    "video": _video,
    "audio": _audio,
    "sticker": _sticker,
    "location": _location,
    "imagemap": _imagemap,
    "template": _template,
    "flex": _flex,
    "coupon": _coupon,
}

"""The preview page: LINE message objects drawn as what recipients see (chat bubbles).

Each message object of the Messaging API (text, image, video, audio, sticker,
location, imagemap, template, flex) becomes one bubble; the raw JSON stays one
click away on the page.
"""

from __future__ import annotations

import json

from django.utils.translation import gettext as _

from console.services import ACTION_ERRORS, IssueMissing, task_preview
from deliveries.models import ContentTask

MAX_FLEX_TEXTS = 12


def preview_page(*, task: ContentTask) -> dict:
    """The template context: the preview, its bubbles and JSON, or the error that stopped it."""
    try:
        preview = task_preview(task=task)
    except IssueMissing:
        return {"task": task, "error": _("Backlog にこの課題がありません（削除された可能性があります）。")}
    except ACTION_ERRORS as exc:
        return {"task": task, "error": _("Backlog から課題を読めませんでした: %(error)s") % {"error": exc}}
    return {
        "task": task,
        "preview": preview,
        "bubbles": [bubble(m) for m in preview.messages],
        "raw_json": json.dumps(preview.messages, ensure_ascii=False, indent=2),
    }


def bubble(message: dict) -> dict:
    kind = message.get("type", "")
    drawn = DRAW.get(kind, _other)(message)
    drawn["quick_replies"] = _labels((message.get("quickReply") or {}).get("items") or [])
    return drawn


def _safe_url(url: object) -> str:
    """Only http(s) images are drawn (a message could carry anything)."""
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else ""


def _labels(items: list) -> list[str]:
    return [str((i.get("action") or {}).get("label") or "") for i in items if isinstance(i, dict)]


def _text(m: dict) -> dict:
    return {"kind": "text", "text": m.get("text", "")}


def _image(m: dict) -> dict:
    return {"kind": "image", "src": _safe_url(m.get("previewImageUrl") or m.get("originalContentUrl"))}


def _video(m: dict) -> dict:
    return {"kind": "video", "src": _safe_url(m.get("previewImageUrl"))}


def _audio(m: dict) -> dict:
    return {"kind": "audio", "seconds": int(m.get("duration") or 0) // 1000}


def _sticker(m: dict) -> dict:
    return {"kind": "sticker", "label": f"{m.get('packageId', '?')} / {m.get('stickerId', '?')}"}


def _location(m: dict) -> dict:
    return {"kind": "location", "title": m.get("title", ""), "text": m.get("address", "")}


def _imagemap(m: dict) -> dict:
    base = _safe_url(m.get("baseUrl"))
    return {"kind": "image", "src": f"{base}/1040" if base else "", "alt": m.get("altText", "")}


def _template(m: dict) -> dict:
    template = m.get("template") or {}
    columns = template.get("columns") or [template]
    cards = [_card(c) for c in columns if isinstance(c, dict)]
    return {"kind": "cards", "alt": m.get("altText", ""), "cards": cards}


def _card(column: dict) -> dict:
    actions = column.get("actions") or ([column["action"]] if column.get("action") else [])
    return {
        "image": _safe_url(column.get("thumbnailImageUrl") or column.get("imageUrl")),
        "title": column.get("title", ""),
        "text": column.get("text", ""),
        "actions": [str(a.get("label") or "") for a in actions if isinstance(a, dict)],
    }


def _flex(m: dict) -> dict:
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


def _other(m: dict) -> dict:
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
}

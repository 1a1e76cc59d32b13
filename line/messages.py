"""LINE's message objects: the limits LINE sets on them and the check against those limits
(pragmatic, not the full spec), shared by every sender of LINE messages.

The limits are LINE's message object limits
(https://developers.line.biz/en/reference/messaging-api/#message-objects). Every problem
message is Japanese: it is posted to the Backlog issue or answered to the API caller.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlsplit

import regex
from django.conf import settings

from line.text_v2 import substitution_problems

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
# The whole push body, checked only with LINE_REFUSE_OVER_2MB: the limit is known only from
# third parties' copies of LINE's status-code table ("413 ... exceeds 2 MB",
# https://developers.line.biz/en/reference/messaging-api/#status-codes), not from LINE's own
# page. The messages plus room for `to` and `notificationDisabled`. Five messages within
# LINE's documented limits of each field stay far below it.
REQUEST_MAX_BYTES = 2_000_000
REQUEST_ENVELOPE_BYTES = 200
# https://developers.line.biz/en/reference/messaging-api/#template-messages; the titles and
# texts of buttons, confirm and carousel templates are counted in grapheme clusters
# (https://developers.line.biz/en/docs/messaging-api/text-character-count).
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
    return problems + _request_size_problems(messages)


def _request_size_problems(messages: list) -> list[str]:
    if not settings.LINE_REFUSE_OVER_2MB:
        return []
    size = _json_size(messages)
    if size <= REQUEST_MAX_BYTES - REQUEST_ENVELOPE_BYTES:
        return []
    return [
        f"メッセージ全体が {size:,} バイトあります（LINE の 1 回の送信の上限は"
        f" {REQUEST_MAX_BYTES - REQUEST_ENVELOPE_BYTES:,} バイト）。"
    ]


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
    # "The Messaging API counts text characters in UTF-16 code units"
    # (https://developers.line.biz/en/docs/messaging-api/text-character-count).
    length = _utf16_length(text)
    if length > TEXT_MAX:
        return [f"text が {length:,} 文字あります（LINE の上限は {TEXT_MAX:,} 文字）。"]
    return []


def _url(message: dict, key: str) -> list[str]:
    value = message.get(key)
    if not isinstance(value, str) or not value.strip():
        return [f"{key} がありません。"]
    try:
        parts = urlsplit(value)
    except ValueError:  # an unbalanced [ in the host
        parts = None
    if parts is None or parts.scheme.lower() != "https" or not parts.netloc:
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


def _grapheme_length(text: str) -> int:
    """Extended grapheme clusters (Unicode UAX #29): 👨‍👩‍👧 or 🇯🇵 is one, as LINE counts it."""
    return len(regex.findall(r"\X", text))


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
    return _headed(
        template,
        text_max=TEMPLATE_BUTTONS_TEXT_MAX,
        with_header_max=TEMPLATE_BUTTONS_TEXT_WITH_HEADER_MAX,
        actions_max=TEMPLATE_BUTTONS_ACTIONS_MAX,
    )


def _confirm(template: dict) -> list[str]:
    return _length(
        template, "text", TEMPLATE_CONFIRM_TEXT_MAX, required=True, count=_grapheme_length
    ) + _count(template, "actions", TEMPLATE_CONFIRM_ACTIONS_MAX)


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
    return _headed(
        column,
        text_max=TEMPLATE_COLUMN_TEXT_MAX,
        with_header_max=TEMPLATE_COLUMN_TEXT_WITH_HEADER_MAX,
        actions_max=TEMPLATE_COLUMN_ACTIONS_MAX,
    )


def _headed(obj: dict, *, text_max: int, with_header_max: int, actions_max: int) -> list[str]:
    """A buttons template or a carousel column: optional image and title (LINE allows less
    text when either is there), text, actions."""
    with_header = bool(obj.get("thumbnailImageUrl") or obj.get("title"))
    return (
        _optional_url(obj, "thumbnailImageUrl")
        + _length(obj, "title", TEMPLATE_TITLE_MAX, count=_grapheme_length)
        + _length(
            obj, "text", with_header_max if with_header else text_max, required=True, count=_grapheme_length
        )
        + _count(obj, "actions", actions_max)
    )


def _image_column(column: dict) -> list[str]:
    return _url(column, "imageUrl") + _required(column, "action")


def _optional_url(obj: dict, key: str) -> list[str]:
    return _url(obj, key) if obj.get(key) not in (None, "") else []


def _length(
    obj: dict, key: str, limit: int, *, required: bool = False, count: Callable[[str], int] = _utf16_length
) -> list[str]:
    value = obj.get(key)
    if value in (None, ""):
        return [f"{key} がありません。"] if required else []
    if not isinstance(value, str):
        return [f"{key} は文字列である必要があります。"]
    if (length := count(value)) > limit:
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
    "textV2": lambda m: _text(m) + substitution_problems(m),
    "image": _media,
    "video": _media,
    "audio": _audio,
    "sticker": lambda m: _required(m, "packageId", "stickerId"),
    "location": lambda m: _required(m, "title", "address", "latitude", "longitude"),
    "flex": _flex,
    "template": _template,
    "imagemap": lambda m: _alt_text(m) + _url(m, "baseUrl") + _required(m, "baseSize", "actions"),
    # messaging-api.yml CouponMessage: `couponId`, and `deliveryTag` of at most 30 characters.
    "coupon": lambda m: _required(m, "couponId") + _length(m, "deliveryTag", 30, required=False),
}

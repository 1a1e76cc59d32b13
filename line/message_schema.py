"""validate_line_messages' rules as JSON Schema (OpenAPI 3.0's subset: `oneOf`, no `if`):
one message object the published API schema allows is one the view accepts.

Where JSON Schema cannot say a rule exactly it says a stricter one: a template's text at
the length LINE allows with a title or an image, a textV2 text without `{key}` placeholders
(their substitution is tied to the text), a URL's host as plain ASCII and https in lower
case. LINE counts lengths in UTF-16 units, JSON Schema in characters: a short field's limit
is stated halved (a character outside the BMP, an emoji, counts twice), a message's text
at LINE's count (the same for Japanese text). Byte sizes of flex containers and of the
whole push are not stated: JSON Schema has no such bound.
"""

from __future__ import annotations

from line.messages import (
    ALT_TEXT_MAX,
    FLEX_CAROUSEL_MAX_BUBBLES,
    MESSAGE_TYPES,
    TEMPLATE_BUTTONS_ACTIONS_MAX,
    TEMPLATE_BUTTONS_TEXT_WITH_HEADER_MAX,
    TEMPLATE_COLUMN_ACTIONS_MAX,
    TEMPLATE_COLUMN_TEXT_WITH_HEADER_MAX,
    TEMPLATE_COLUMNS_MAX,
    TEMPLATE_CONFIRM_ACTIONS_MAX,
    TEMPLATE_CONFIRM_TEXT_MAX,
    TEMPLATE_TITLE_MAX,
    TEXT_MAX,
    URL_MAX,
)

# Some character Python's str.strip() keeps: \s, and the separators Python strips but
# ECMAScript's \s does not match.
NOT_BLANK = {"type": "string", "minLength": 1, "pattern": "[^\\s\\x1c-\\x1f\\x85]"}
FILLED = {"type": "string", "minLength": 1}
# urlsplit refuses a host with brackets or characters that normalize to a delimiter.
HTTPS_URL = {
    "type": "string",
    "maxLength": URL_MAX,
    "pattern": "^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?([/?#]\\S*)?$",
}
ALT_TEXT = {**NOT_BLANK, "maxLength": ALT_TEXT_MAX}  # counted in characters, as LINE's check here does
COUPON_DELIVERY_TAG_MAX = 30  # messaging-api.yml CouponMessage


def _object(required: dict, optional: dict | None = None) -> dict:
    return {"type": "object", "required": list(required), "properties": {**required, **(optional or {})}}


def _message(kinds: tuple[str, ...], required: dict, optional: dict | None = None) -> dict:
    return _object({"type": {"type": "string", "enum": list(kinds)}, **required}, optional)


def _text(limit: int, min_length: int = 1) -> dict:
    """A string LINE counts in UTF-16 units, at most `limit` of them whatever its characters."""
    return {"type": "string", "minLength": min_length, "maxLength": limit // 2}


def _actions(limit: int) -> dict:
    return {"type": "array", "maxItems": limit, "items": {"type": "object"}}


def _columns(column: dict) -> dict:
    return {"type": "array", "minItems": 1, "maxItems": TEMPLATE_COLUMNS_MAX, "items": column}


HEADER = {"thumbnailImageUrl": HTTPS_URL, "title": _text(TEMPLATE_TITLE_MAX, min_length=0)}
TEMPLATES = [
    _message(
        ("buttons",),
        {"text": _text(TEMPLATE_BUTTONS_TEXT_WITH_HEADER_MAX)},
        {**HEADER, "actions": _actions(TEMPLATE_BUTTONS_ACTIONS_MAX)},
    ),
    _message(
        ("confirm",),
        {"text": _text(TEMPLATE_CONFIRM_TEXT_MAX)},
        {"actions": _actions(TEMPLATE_CONFIRM_ACTIONS_MAX)},
    ),
    _message(
        ("carousel",),
        {
            "columns": _columns(
                _object(
                    {"text": _text(TEMPLATE_COLUMN_TEXT_WITH_HEADER_MAX)},
                    {**HEADER, "actions": _actions(TEMPLATE_COLUMN_ACTIONS_MAX)},
                )
            )
        },
    ),
    _message(
        ("image_carousel",),
        {"columns": _columns(_object({"imageUrl": HTTPS_URL, "action": {"type": "object"}}))},
    ),
]
SUBSTITUTION = {
    "oneOf": [
        _message(("emoji",), {"productId": NOT_BLANK, "emojiId": NOT_BLANK}),
        _message(
            ("mention",),
            {
                "mentionee": {
                    "oneOf": [
                        _message(("user",), {"userId": NOT_BLANK}),
                        _message(("all",), {}),
                    ]
                }
            },
        ),
    ]
}
TEXT = {**NOT_BLANK, "maxLength": TEXT_MAX}
MESSAGES = [
    _message(("text",), {"text": TEXT}),
    _message(
        ("textV2",),
        {"text": {**TEXT, "allOf": [{"pattern": "^[^{}]*$"}]}},
        {"substitution": {"type": "object", "additionalProperties": SUBSTITUTION}},
    ),
    _message(("image", "video"), {"originalContentUrl": HTTPS_URL, "previewImageUrl": HTTPS_URL}),
    _message(("audio",), {"originalContentUrl": HTTPS_URL, "duration": {"type": "integer", "minimum": 1}}),
    _message(("sticker",), {"packageId": FILLED, "stickerId": FILLED}),
    _message(
        ("location",),
        {"title": FILLED, "address": FILLED, "latitude": {"type": "number"}, "longitude": {"type": "number"}},
    ),
    _message(
        ("imagemap",),
        {
            "altText": ALT_TEXT,
            "baseUrl": HTTPS_URL,
            "baseSize": {"type": "object"},
            "actions": {"type": "array"},
        },
    ),
    _message(("template",), {"altText": ALT_TEXT, "template": {"oneOf": TEMPLATES}}),
    _message(
        ("flex",),
        {
            "altText": ALT_TEXT,
            "contents": {
                "oneOf": [
                    _message(("bubble",), {}),
                    _message(
                        ("carousel",),
                        {
                            "contents": {
                                "type": "array",
                                "minItems": 1,
                                "maxItems": FLEX_CAROUSEL_MAX_BUBBLES,
                                "items": {"type": "object"},
                            }
                        },
                    ),
                ]
            },
        },
    ),
    _message(
        ("coupon",), {"couponId": FILLED}, {"deliveryTag": _text(COUPON_DELIVERY_TAG_MAX, min_length=0)}
    ),
]

MESSAGE_SCHEMA = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string", "enum": list(MESSAGE_TYPES)}},
    "oneOf": MESSAGES,
    "description": "LINE のメッセージオブジェクト（https://developers.line.biz/ja/reference/messaging-api/#message-objects）",
}

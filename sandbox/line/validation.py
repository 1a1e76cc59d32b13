"""Send bodies checked as LINE does it, pragmatically: required fields of every message type,
text length in UTF-16 code units, https media URLs, list sizes (sandbox/line/__init__.py)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sandbox.line.records import (
    FLEX_CONTAINERS,
    HTTPS_FIELDS,
    INVALID_TO,
    MAX_MESSAGES,
    MAX_MULTICAST_RECIPIENTS,
    MAX_QUICK_REPLY_ITEMS,
    MAX_TEXT_LENGTH,
    MAX_URL_LENGTH,
    MESSAGE_TYPES,
    OBJECT_FIELDS,
    QUOTING_TYPES,
    RECIPIENT_ID,
    REQUIRED_FIELDS,
    UNIT_NAME,
    USER_ID,
    YYYYMMDD,
    Json,
    LineError,
    invalid_body,
)


def _utf16_length(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _check_https_url(value: Any, prop: str, errors: list[tuple[str, str]]) -> None:
    if not isinstance(value, str) or not value.startswith("https://") or len(value) <= len("https://"):
        errors.append((prop, "Must be a valid HTTPS URL"))
    elif len(value) > MAX_URL_LENGTH:
        errors.append((prop, f"Length must be between 0 and {MAX_URL_LENGTH}"))


def _check_message(message: Any, prop: str, errors: list[tuple[str, str]]) -> None:
    if not isinstance(message, dict):
        errors.append((prop, "Must be an object"))
        return
    kind = message.get("type")
    if kind is None or kind == "":
        errors.append((f"{prop}.type", "May not be empty"))
        return
    if kind not in REQUIRED_FIELDS:
        errors.append((f"{prop}.type", f"Must be one of the following values: [{', '.join(MESSAGE_TYPES)}]"))
        return
    for name in REQUIRED_FIELDS[kind]:
        value = message.get(name)
        if value is None or value == "" or value == [] or value == {}:
            errors.append((f"{prop}.{name}", "May not be empty"))
    if kind in ("text", "textV2"):
        text = message.get("text")
        if text is not None and not isinstance(text, str):
            errors.append((f"{prop}.text", "Must be a string"))
        elif text and _utf16_length(text) > MAX_TEXT_LENGTH:
            errors.append((f"{prop}.text", f"Length must be between 0 and {MAX_TEXT_LENGTH}"))
    if kind in QUOTING_TYPES and "quoteToken" in message:
        token = message["quoteToken"]
        if not isinstance(token, str) or not token:
            errors.append((f"{prop}.quoteToken", "Must be a non-empty string"))
    for name in HTTPS_FIELDS.get(kind, ()):
        if message.get(name):
            _check_https_url(message[name], f"{prop}.{name}", errors)
    object_field = OBJECT_FIELDS.get(kind)
    if object_field is not None and message.get(object_field):
        contained = message[object_field]
        if not isinstance(contained, dict) or not contained.get("type"):
            errors.append((f"{prop}.{object_field}.type", "May not be empty"))
        elif kind == "flex" and contained["type"] not in FLEX_CONTAINERS:
            errors.append(
                (f"{prop}.contents.type", "Must be one of the following values: [bubble, carousel]")
            )
    quick_reply = message.get("quickReply")
    if isinstance(quick_reply, dict):
        items = quick_reply.get("items")
        if isinstance(items, list) and len(items) > MAX_QUICK_REPLY_ITEMS:
            errors.append((f"{prop}.quickReply.items", f"Size must be between 0 and {MAX_QUICK_REPLY_ITEMS}"))


def check_messages(body: Json, errors: list[tuple[str, str]]) -> None:
    messages = body.get("messages")
    if messages is None:
        errors.append(("messages", "May not be null"))
    elif not isinstance(messages, list):
        errors.append(("messages", "Must be an array"))
    elif not 1 <= len(messages) <= MAX_MESSAGES:
        errors.append(("messages", f"Size must be between 1 and {MAX_MESSAGES}"))
    else:
        for index, message in enumerate(messages):
            _check_message(message, f"messages[{index}]", errors)
    disabled = body.get("notificationDisabled")
    if disabled is not None and not isinstance(disabled, bool):
        errors.append(("notificationDisabled", "Must be a boolean"))


def _check_units(body: Json, errors: list[tuple[str, str]]) -> None:
    units = body.get("customAggregationUnits")
    if units is None:
        return
    if not isinstance(units, list):
        errors.append(("customAggregationUnits", "Must be an array"))
    elif len(units) > 1:
        errors.append(("customAggregationUnits", "Size must be between 0 and 1"))
    else:
        for index, unit in enumerate(units):
            if not isinstance(unit, str) or UNIT_NAME.fullmatch(unit) is None:
                errors.append((f"customAggregationUnits[{index}]", 'Must match "^[a-zA-Z0-9_]{1,30}$"'))


def check_push(body: Json) -> None:
    errors: list[tuple[str, str]] = []
    to = body.get("to")
    if to is None or to == "":
        errors.append(("to", "May not be empty"))
    elif not isinstance(to, str):
        errors.append(("to", "Must be a string"))
    check_messages(body, errors)
    _check_units(body, errors)
    if errors:
        raise invalid_body(errors)
    if RECIPIENT_ID.fullmatch(to) is None:
        raise LineError(400, INVALID_TO)


def check_multicast(body: Json) -> None:
    errors: list[tuple[str, str]] = []
    to = body.get("to")
    if to is None:
        errors.append(("to", "May not be null"))
    elif not isinstance(to, list):
        errors.append(("to", "Must be an array"))
    elif not 1 <= len(to) <= MAX_MULTICAST_RECIPIENTS:
        errors.append(("to", f"Size must be between 1 and {MAX_MULTICAST_RECIPIENTS}"))
    else:
        errors.extend(
            (f"to[{i}]", "Must be a string") for i, user in enumerate(to) if not isinstance(user, str)
        )
    check_messages(body, errors)
    _check_units(body, errors)
    if errors:
        raise invalid_body(errors)
    if any(USER_ID.fullmatch(user) is None for user in to):
        raise LineError(400, INVALID_TO)


def check_reply(body: Json) -> None:
    errors: list[tuple[str, str]] = []
    token = body.get("replyToken")
    if token is None or token == "":
        errors.append(("replyToken", "May not be empty"))
    elif not isinstance(token, str):
        errors.append(("replyToken", "Must be a string"))
    check_messages(body, errors)
    if errors:
        raise invalid_body(errors)


def parse_yyyymmdd(params: dict[str, list[str]], name: str, errors: list[tuple[str, str]]) -> date | None:
    raw = params.get(name, [""])[0]
    if YYYYMMDD.fullmatch(raw):
        try:
            return datetime.strptime(raw, "%Y%m%d").date()
        except ValueError:
            pass
    errors.append((name, "Must be a date in yyyyMMdd format"))
    return None

"""The shape of a LINE webhook event automedia stores and acts on.

Checked at the receiver (a body with one bad event is a 400 with the reason) and again
before a stored event is handled (an event stored before these checks ends `rejected`).
Shapes: webhook.yml of line/line-openapi (`Event`, `Source`, `MessageContent`,
`JoinedMembers`); ids: https://developers.line.biz/en/docs/messaging-api/getting-user-ids/
"""

from __future__ import annotations

import re

from linepush.inbound_models import LineWebhookEvent

EVENT_ID_MAX = LineWebhookEvent._meta.get_field("webhook_event_id").max_length
TYPE_MAX = LineWebhookEvent._meta.get_field("type").max_length
REPLY_TOKEN_MAX = 255  # LINE's are 32 hex characters; anything far longer is no reply token
# A user, group or room id goes into a LINE API path (profile, member count): only LINE's
# own format, so no event can steer a request elsewhere (`"userId": "../../x"`).
SOURCE_IDS = {
    "userId": re.compile(r"U[0-9a-f]{32}"),
    "groupId": re.compile(r"C[0-9a-f]{32}"),
    "roomId": re.compile(r"R[0-9a-f]{32}"),
}


def line_events_problem(events: list) -> str:
    """The first event of a webhook body automedia cannot take, with where it is, or ""."""
    for index, event in enumerate(events):
        if problem := line_event_problem(event):
            return f"events[{index}]: {problem}"
    return ""


def line_event_problem(event: object) -> str:
    """Why automedia cannot store or act on this event, or "" when it can."""
    if not isinstance(event, dict):
        return "event must be an object"
    kind = event.get("type")
    if not isinstance(kind, str) or not 0 < len(kind) <= TYPE_MAX:
        return f"event `type` must be a string of 1 to {TYPE_MAX} characters"
    return _event_id_problem(event) or line_event_fields_problem(event)


def line_event_fields_problem(payload: object) -> str:
    """The fields a handler reads: run again on a stored event before it is handled."""
    if not isinstance(payload, dict):
        return "event must be an object"
    for check in (
        _source_problem,
        _timestamp_problem,
        _reply_token_problem,
        _message_problem,
        _members_problem,
    ):
        if problem := check(payload):
            return problem
    return ""


def _event_id_problem(event: dict) -> str:
    # Required by webhook.yml; without it the receiver identifies the event by its bytes.
    event_id = event.get("webhookEventId")
    if event_id is not None and not (isinstance(event_id, str) and 0 < len(event_id) <= EVENT_ID_MAX):
        return f"`webhookEventId` must be a string of 1 to {EVENT_ID_MAX} characters"
    return ""


def _source_problem(payload: dict) -> str:
    source = payload.get("source")
    if source is None:
        return ""
    if not isinstance(source, dict) or not isinstance(source.get("type"), str):
        return "`source` must be an object with a `type`"
    for name, pattern in SOURCE_IDS.items():
        value = source.get(name)
        if value is not None and not (isinstance(value, str) and pattern.fullmatch(value)):
            return f"`source.{name}` is not a LINE id"
    return ""


def _timestamp_problem(payload: dict) -> str:
    stamp = payload.get("timestamp")
    if stamp is None or (isinstance(stamp, int) and not isinstance(stamp, bool)):
        return ""
    return "`timestamp` must be an integer (milliseconds)"


def _reply_token_problem(payload: dict) -> str:
    token = payload.get("replyToken")
    if token is None or (isinstance(token, str) and len(token) <= REPLY_TOKEN_MAX):
        return ""
    return f"`replyToken` must be a string of at most {REPLY_TOKEN_MAX} characters"


def _message_problem(payload: dict) -> str:
    message = payload.get("message")
    if message is None:
        return ""
    if not isinstance(message, dict):
        return "`message` must be an object"
    if not isinstance(message.get("type", ""), str) or not isinstance(message.get("text", ""), str):
        return "`message.type` and `message.text` must be strings"
    return ""


def _members_problem(payload: dict) -> str:
    for key in ("joined", "left"):
        moved = payload.get(key)
        if moved is None:
            continue
        if not isinstance(moved, dict) or not isinstance(moved.get("members", []), list):
            return f"`{key}` must be an object with a `members` list"
    return ""

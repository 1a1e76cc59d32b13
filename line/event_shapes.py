"""The shape of a LINE webhook event automedia stores and acts on.

Checked per event at the receiver (an odd event is stored `rejected` with the reason,
beside the body's other events) and again before a stored event is handled.
Shapes: webhook.yml of line/line-openapi (`Event`, `Source`, `MessageContent`,
`JoinedMembers`); ids: https://developers.line.biz/en/docs/messaging-api/getting-user-ids/
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from core.webhooks import json_problem, text_problem
from line.models import LineWebhookEvent

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


EVENT_DEPTH = 3  # an event's level in its body: {"events": [{…}]}


@dataclass(frozen=True)
class Intake:
    """One event of a body as the receiver stores it: `problem` is why it is odd ("" when
    it is not); an event whose text or nesting no column can hold keeps no payload."""

    event_id: str
    type: str
    payload: dict
    problem: str = ""


def line_event_intake(event: object) -> Intake:
    """How the receiver stores this event: as it came, odd (with the reason) or, when
    the database cannot hold it, by its id and the reason alone."""
    if not isinstance(event, dict):
        return Intake(_derived_id(event), "", {}, "payload not stored: event must be an object")
    if problem := json_problem(event, depth=EVENT_DEPTH):
        return Intake(_event_id(event), _type(event), {}, f"payload not stored: {problem}")
    return Intake(_event_id(event), _type(event), event, line_event_problem(event))


def _event_id(event: dict) -> str:
    event_id = event.get("webhookEventId")
    if isinstance(event_id, str) and 0 < len(event_id) <= EVENT_ID_MAX and not text_problem(event_id):
        return event_id
    return _derived_id(event)


def _derived_id(event: object) -> str:
    # webhookEventId is required by webhook.yml; without a usable one the event's own
    # bytes identify it, so a redelivered body is still deduplicated.
    text = json.dumps(event, sort_keys=True)  # ASCII escapes: a lone surrogate hashes too
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[: EVENT_ID_MAX - 7]


def _type(event: dict) -> str:
    kind = event.get("type")
    return kind[:TYPE_MAX] if isinstance(kind, str) and not text_problem(kind) else ""


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

"""Messages to one LINE user or group outside the group-post queue: テスト配信 to a
manager's own account and the notices of new 要対応 rows. They are no delivery and no
group post: no attempt row, no write-back, no dedupe key. LINE still counts them in the
month's messages, as it counts every push
(https://developers.line.biz/en/docs/messaging-api/sending-messages/#send-push-messages)."""

from __future__ import annotations

import uuid

from core.models import Tenant
from line.services import message_push

TEST_MARK = "【テスト配信】"
MAX_MESSAGES = 5  # a push carries at most five message objects (Messaging API reference)


def marked_as_test(messages: list[dict], *, note: str) -> list[dict]:
    """The messages as a test: the first text starts with the mark and the note, or a text
    with them comes first; a post of another platform goes as its description."""
    as_line = [_as_line(m) for m in messages]
    head = f"{TEST_MARK}{note}"
    if as_line and as_line[0].get("type") == "text":
        return [{**as_line[0], "text": f"{head}\n{as_line[0]['text']}"}, *as_line[1:]][:MAX_MESSAGES]
    return [{"type": "text", "text": head}, *as_line][:MAX_MESSAGES]


def _as_line(message: dict) -> dict:
    # A post of Instagram / TikTok / HubSpot is rendered as {"type": "<channel>:<kind>", "altText"}.
    if ":" in str(message.get("type", "")):
        return {"type": "text", "text": str(message.get("altText") or "")}
    return message


def direct_push(*, tenant: Tenant, to: str, messages: list[dict]) -> None:
    """One push; raises TransportError as any LINE send."""
    message_push(tenant=tenant, to=to, messages=messages, retry_key=str(uuid.uuid4()))

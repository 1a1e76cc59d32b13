"""The LINE webhook's events, acted on in a worker once line/intake.py stored them,
under the shared intake's claim (core/intake.py, `LINE_EVENTS`).

`HANDLERS`: follow → the contact and its registration (coupon) reply; unfollow → blocked; a
text message or its edit → the survey rules (line/answers.py); a group's join, leave and
member changes → the group (`LineSource`) and its member count; other types are ignored.
Shapes: `Event` in webhook.yml of https://github.com/line/line-openapi (tests/contracts/ has a copy).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.intake import EventIgnored, EventIntake, EventRejected
from core.models import Tenant
from core.transport import TransportError
from line.answers import answer_apply
from line.event_shapes import line_event_fields_problem
from line.models import LineContact, LineSource, LineWebhookEvent
from line.retention import payload_blanked
from line.services import push_settings
from line.transport import LineTransport, line_transport

logger = logging.getLogger(__name__)


def _handle(event: LineWebhookEvent, transport: LineTransport | None = None) -> str:
    """The intake's handler: the handler of the event's type, once its fields are checked."""
    handler = HANDLERS.get(event.type)
    if handler is None:
        raise EventIgnored(f"{event.type} は扱いません")
    if problem := line_event_fields_problem(event.payload):
        raise EventRejected(f"invalid payload: {problem}")
    transport = transport or line_transport(event.tenant.line_channel_token or "-")
    return handler(event.tenant, event.payload, transport)


def _settled(event: LineWebhookEvent) -> dict:
    """A message's content blanked as the event ends: nothing processes it again. Only a
    message's payload is written back, so no other event's can undo an erasure
    (line/erasure.py) that ran while it was processed."""
    blanked = payload_blanked(event.payload)
    return {} if blanked is event.payload else {"payload": blanked}


LINE_EVENTS = EventIntake(
    model=LineWebhookEvent,
    handle=_handle,
    drain_task="line.tasks.process_line_events",
    name="LINE event",
    on_settled=_settled,
)


def line_event_process(*, event_id: int, transport: LineTransport | None = None) -> str:
    """Act on one stored event under a claim (core/intake.py): the broker's task, the sweep
    and a drain may all reach it, and only the one whose conditional UPDATE hits the row acts."""
    return LINE_EVENTS.process(event_id=event_id, transport=transport)


def line_events_drain() -> int:
    """Every due event in arrival order (the drain the webhook and the stranded-events step
    enqueue)."""
    return LINE_EVENTS.drain()


def line_events_retry(*, older_than: timedelta = timedelta(minutes=1)) -> int:
    """The recurring sweep: events the broker lost or whose retry is due run again; one whose
    attempts ran out with no outcome ends rejected."""
    return LINE_EVENTS.sweep(older_than=older_than)


def line_events_stranded_step(*, now: datetime, limit: int) -> bool:
    """run_scheduler's step: a drain for events due longer than core.intake.STRANDED_AFTER."""
    return LINE_EVENTS.stranded_step(now=now, limit=limit)


def _occurred(payload: dict) -> datetime:
    """The event's own time (a redelivered event keeps it, webhook.yml `timestamp`)."""
    try:
        return datetime.fromtimestamp(int(payload["timestamp"]) / 1000, tz=UTC)
    except (KeyError, TypeError, ValueError, OverflowError):
        return timezone.now()


def _user_id(payload: dict) -> str:
    source = payload.get("source") or {}
    return source.get("userId") or "" if isinstance(source, dict) else ""


# -- 1:1 events ------------------------------------------------------------------------------


def _follow(tenant: Tenant, payload: dict, transport: LineTransport) -> str:
    user_id = _user_id(payload)
    if not user_id:
        return "no userId"
    contact, created = LineContact.objects.get_or_create(tenant=tenant, user_id=user_id)
    name = contact.display_name or _display_name(transport, user_id)
    followed = {"display_name": name, "followed_at": _occurred(payload), "updated_at": timezone.now()}
    LineContact.objects.filter(pk=contact.pk).update(blocked=False, blocked_at=None, **followed)
    replied = _registration_reply(tenant, payload.get("replyToken"), transport)
    # The detail is shown to every member of the tenant and outlives an erasure: no user id.
    return f"{'new' if created else 'known'} contact; {replied}"


def _display_name(transport: LineTransport, user_id: str) -> str:
    try:
        return str(transport.profile(user_id).get("displayName") or "")[:200]
    except TransportError:
        return ""  # the name is a nicety; the contact is recorded without it


def _registration_reply(tenant: Tenant, reply_token: str | None, transport: LineTransport) -> str:
    messages = push_settings(tenant=tenant).registration_messages
    if not messages or not reply_token:
        return "no registration reply configured"
    try:
        transport.reply(reply_token=reply_token, messages=messages)
    except TransportError as exc:
        # A reply token is single-use and short-lived: retrying later cannot help.
        logger.warning("registration reply for %s failed: %s", tenant.slug, exc.message)
        return f"registration reply failed: {exc.message}"
    return "registration reply sent"


def _unfollow(tenant: Tenant, payload: dict, transport: LineTransport) -> str:
    user_id = _user_id(payload)
    if not user_id:
        return "no userId"
    contact, _ = LineContact.objects.get_or_create(tenant=tenant, user_id=user_id)
    # A redelivered unfollow keeps the first block's time: the grace period runs from it.
    blocked = {"blocked_at": Coalesce("blocked_at", Value(_occurred(payload))), "updated_at": timezone.now()}
    LineContact.objects.filter(pk=contact.pk).update(blocked=True, **blocked)
    return "blocked"


def _message(tenant: Tenant, payload: dict, transport: LineTransport) -> str:
    """A text message, or an edit of one (`messageEdited`): a survey answer."""
    message = payload.get("message") or {}
    user_id = _user_id(payload)
    if message.get("type") != "text" or not user_id:
        return "not a text message from a user"
    stamp = payload.get("timestamp")
    timestamp = stamp if isinstance(stamp, int) else int(_occurred(payload).timestamp() * 1000)
    return answer_apply(tenant=tenant, user_id=user_id, message=message, timestamp=timestamp)


# -- groups and rooms --------------------------------------------------------------------------


def _group_ref(payload: dict) -> tuple[str, str]:
    source = payload.get("source") or {}
    if source.get("type") == "group":
        return source.get("groupId") or "", LineSource.Kind.GROUP
    if source.get("type") == "room":
        return source.get("roomId") or "", LineSource.Kind.ROOM
    return "", ""


def _member_count(transport: LineTransport, group_id: str, kind: str) -> int | None:
    try:
        return transport.member_count(group_id, room=kind == LineSource.Kind.ROOM)
    except (TransportError, KeyError, ValueError):
        return None


def _group_name(transport: LineTransport, group_id: str, kind: str) -> str:
    if kind != LineSource.Kind.GROUP:
        return ""
    try:
        return str(transport.group_summary(group_id).get("groupName") or "")[:200]
    except TransportError:
        return ""


def _join(tenant: Tenant, payload: dict, transport: LineTransport) -> str:
    group_id, kind = _group_ref(payload)
    if not group_id:
        return "no group in source"
    source, created = LineSource.objects.get_or_create(
        tenant=tenant, group_id=group_id, defaults={"kind": kind}
    )
    changes = {"joined_at": _occurred(payload), "left_at": None, "kind": kind, "updated_at": timezone.now()}
    name = _group_name(transport, group_id, kind)
    if name:
        changes["name"] = name
    count = _member_count(transport, group_id, kind)
    if count is not None:
        changes["member_count"] = count
    LineSource.objects.filter(pk=source.pk).update(**changes)
    return f"joined {group_id} ({count if count is not None else '?'} members)"


def _leave(tenant: Tenant, payload: dict, transport: LineTransport) -> str:
    group_id, _ = _group_ref(payload)
    updated = LineSource.objects.filter(tenant=tenant, group_id=group_id).update(
        left_at=_occurred(payload), updated_at=timezone.now()
    )
    return f"left {group_id}" if updated else f"left unknown {group_id}"


def _members_changed(sign: int, key: str) -> Callable[[Tenant, dict, LineTransport], str]:
    def handle(tenant: Tenant, payload: dict, transport: LineTransport) -> str:
        group_id, kind = _group_ref(payload)
        if not group_id:
            return "no group in source"
        source, _ = LineSource.objects.get_or_create(
            tenant=tenant, group_id=group_id, defaults={"kind": kind}
        )
        # LINE's count is the truth (events may arrive late or twice); the event only
        # adjusts the stored count when LINE cannot be asked.
        count = _member_count(transport, group_id, kind)
        if count is None and source.member_count is not None:
            moved = len((payload.get(key) or {}).get("members") or [])
            count = max(0, source.member_count + sign * moved)
        LineSource.objects.filter(pk=source.pk).update(member_count=count, updated_at=timezone.now())
        return f"{group_id}: {count} members"

    return handle


HANDLERS: dict[str, Callable[[Tenant, dict, LineTransport], str]] = {
    "follow": _follow,
    "unfollow": _unfollow,
    "message": _message,
    "messageEdited": _message,
    "join": _join,
    "leave": _leave,
    "memberJoined": _members_changed(+1, "joined"),
    "memberLeft": _members_changed(-1, "left"),
}

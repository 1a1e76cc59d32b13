"""Workflows over the LINE account: a tenant's LINE settings, whom a tag audience reaches, a
push, a group's member count, a channel token LINE refused."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from backlog_bridge.audience import Audience
from core.connections import connection_denied
from core.models import Tenant
from core.transport import SendResult
from line.models import LineContact, LinePushSettings, LineSource
from line.transport import line_transport


def push_settings(*, tenant: Tenant) -> LinePushSettings:
    """The tenant's LINE settings, made with the defaults when it has none."""
    found = LinePushSettings.objects.select_related("plan").filter(tenant=tenant).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return LinePushSettings.objects.create(tenant=tenant)
    except IntegrityError:
        return LinePushSettings.objects.select_related("plan").get(tenant=tenant)


def contacts_matching(*, tenant: Tenant, audience: Audience) -> list[str]:
    """The user ids of the tenant's followers (not blocked) the tag audience reaches, sorted."""
    contacts = LineContact.objects.filter(tenant=tenant, blocked=False).order_by("user_id")
    return [c.user_id for c in contacts.only("user_id", "tags") if audience.matches(set(c.tags))]


def message_push(*, tenant: Tenant, to: str, messages: list[dict], retry_key: str) -> SendResult:
    """One push to a user, group or room with the tenant's channel token; raises TransportError.
    LINE accepts a retry key once in 24 h and answers a resend 409, a duplicate result
    (https://developers.line.biz/en/docs/messaging-api/retrying-api-request/)."""
    return line_transport(tenant.line_channel_token or "-").push(
        to=to, messages=messages, retry_key=retry_key
    )


def member_count_read(*, source: LineSource) -> int:
    """LINE's count of a group's or room's members, the bot excluded; raises TransportError,
    or KeyError, TypeError or ValueError for an answer without a count."""
    room = source.kind == LineSource.Kind.ROOM
    return line_transport(source.tenant.line_channel_token).member_count(source.group_id, room=room)


TOKEN_REFUSED = (
    "LINE がチャネルアクセストークンを拒否しました（期限切れか無効）。LINE Developers コンソール → Messaging API 設定で"
    "長期のチャネルアクセストークンを発行し、テナント設定（LINE チャネルアクセストークン）で保存してください。"
)


def token_refused(*, tenant_id: int) -> None:
    """LINE refused the channel token at run time (401/403): the connection fails until a check passes."""
    connection_denied(tenant_id=tenant_id, platform="line", problem=TOKEN_REFUSED)

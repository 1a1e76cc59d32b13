"""What the rest of deliveries asks of a channel's publisher, through the registry.

Each channel's `publisher` answers: `render` (the content it publishes), `messages` (that
content as a preview lists it), `send_problems` (what stops a send now), `publish` and,
when it has work ahead of the due second, `prepare`; `outcome` (what the run keeps of a
publication) and `outcome_lines` (how the write-back comment says it).
"""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.channels import CHANNELS, DEFAULT_CHANNEL
from core.models import Tenant
from deliveries.channels.publisher_base import Context, Done, PublishFailed, Wait, Waiting
from deliveries.channels.registry import channel_part


def sending_channel(parsed: ParsedTask, override: dict | None) -> str | None:
    """The channel a send goes to: the body's チャネル; a command's send without one names a
    template of the default channel."""
    return parsed.channel or (DEFAULT_CHANNEL if override else None)


def content_render(*, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict) -> dict | list:
    """What `channel` publishes for the task (a post, or messages); PublishFailed says why not."""
    return channel_part(channel, "publisher").render(tenant=tenant, parsed=parsed, override=override)


def messages_render(*, tenant: Tenant, parsed: ParsedTask, override: dict | None = None) -> list[dict]:
    """The messages exactly as they will be sent (also what a preview shows).

    `override`: `/automedia send template=… audience=…` values, which win over the body.
    """
    override = override or {}
    channel = sending_channel(parsed, override)
    if channel not in CHANNELS:
        raise PublishFailed(f"チャネル「{channel or 'なし'}」への配信はまだ対応していません")
    publisher = channel_part(channel, "publisher")
    return publisher.messages(publisher.render(tenant=tenant, parsed=parsed, override=override))


def send_problems(
    *, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict, now: datetime
) -> list[str]:
    """Every problem that would stop this send before its first call, found without sending."""
    return channel_part(channel, "publisher").send_problems(
        tenant=tenant, parsed=parsed, override=override, now=now
    )


def publish_step(*, channel: str, ctx: Context) -> Done | Wait:
    try:
        return channel_part(channel, "publisher").publish(ctx)
    except Waiting as waiting:
        return waiting.wait


def prepares(channel: str | None) -> bool:
    """Whether the channel has work to do ahead of the due second (deliveries/prepare/ahead.py)."""
    return channel in CHANNELS and hasattr(channel_part(channel, "publisher"), "prepare")


def prepare_send(*, channel: str, ctx: Context) -> datetime | None:
    """The channel's work ahead of the due second, which publishes nothing; when it wants
    to look again (None: ready)."""
    return channel_part(channel, "publisher").prepare(ctx)


def outcome_fields(channel: str, summary: dict) -> dict:
    """What the run's outcome keeps of a publication (written back, then planned from)."""
    return channel_part(channel, "publisher").outcome(summary)


def outcome_lines(outcome: dict) -> list[str]:
    """The write-back comment's lines about a publication. An outcome names its channel; one
    kept before outcomes did is the default channel's."""
    channel = outcome.get("channel") or DEFAULT_CHANNEL
    return channel_part(channel, "publisher").outcome_lines(outcome)

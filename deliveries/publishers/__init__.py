"""Publishers of the Instagram, TikTok and HubSpot channels (LINE is deliveries/delivery.py).

`delivery.py` dispatches a task whose チャネル is one of these to `publish_step`, which
returns Done or Wait, or raises PublishFailed / PlatformError / ClaimLost.
"""

from __future__ import annotations

from collections.abc import Callable

from backlog_bridge.parser import ParsedTask, TemplateRef
from deliveries.channel_templates import CHANNELS, render_channel_template
from deliveries.models import ChannelPost, ContentTask, Tenant
from deliveries.publishers import hubspot, instagram, tiktok
from deliveries.publishers.base import ClaimLost, Context, Done, PublishFailed, Wait, Waiting, account_for
from deliveries.rendering import RenderError, template_resolve

__all__ = [
    "CHANNELS",
    "ClaimLost",
    "Context",
    "Done",
    "PublishFailed",
    "Wait",
    "account_for",
    "committed_post",
    "post_render",
    "publish_step",
]

PUBLISHERS: dict[str, Callable[[Context], Done | Wait]] = {
    "instagram": instagram.publish,
    "tiktok": tiktok.publish,
    "hubspot": hubspot.publish,
}


def publish_step(*, channel: str, ctx: Context) -> Done | Wait:
    try:
        return PUBLISHERS[channel](ctx)
    except Waiting as waiting:
        return waiting.wait


def post_render(*, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict | None = None) -> dict:
    """The channel template filled with the issue's 文面 / 変数 and validated (RenderError names the field)."""
    override = override or {}
    ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
    if ref is None:
        raise RenderError(["テンプレが指定されていません"])
    template = template_resolve(tenant=tenant, ref=ref, channel=channel)
    return render_channel_template(channel, template.messages, parsed.variables)


def committed_post(task: ContentTask) -> ChannelPost | None:
    """This approval's publication once a publish call may have reached the platform."""
    post = ChannelPost.objects.filter(task=task, approval_seq=task.approval_seq).first()
    return post if post is not None and post.is_committed() else None

"""Publishers of the Instagram, TikTok and HubSpot channels (LINE is deliveries/delivery.py).

`delivery.py` dispatches a task whose チャネル is one of these to `publish_step`, which
returns Done or Wait, or raises PublishFailed / PlatformError / ClaimLost.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from backlog_bridge.parser import ParsedTask, TemplateRef
from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.channel_templates import CHANNELS, describe, render_channel_template
from deliveries.models import CHANNEL_LABELS, ChannelAccount, ChannelPost, ContentTask
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
    "account_problems",
    "committed_post",
    "post_check",
    "post_message",
    "post_render",
    "publish_step",
]

PUBLISHERS: dict[str, Callable[[Context], Done | Wait]] = {
    "instagram": instagram.publish,
    "tiktok": tiktok.publish,
    "hubspot": hubspot.publish,
}

ACCOUNT_CHECKS: dict[str, Callable[[ChannelAccount, dict | None, datetime], list[str]]] = {
    "instagram": instagram.account_problems,
    "tiktok": tiktok.account_problems,
    "hubspot": hubspot.account_problems,
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


def post_message(channel: str, content: dict) -> dict:
    """The post in the shape of a rendered message (as `delivery_render` returns it)."""
    return {"type": f"{channel}:{content['type']}", "altText": describe(channel, content), "content": content}


def committed_post(task: ContentTask) -> ChannelPost | None:
    """This approval's publication once a publish call may have reached the platform."""
    post = ChannelPost.objects.filter(task=task, approval_seq=task.approval_seq).first()
    return post if post is not None and post.is_committed() else None


def post_check(
    *, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict | None, now: datetime
) -> tuple[dict | None, list[str]]:
    """The filled template (None if it cannot be) and every problem that would stop the post
    before its first platform call, without calling the platform (`/automedia send`, preview)."""
    try:
        content = post_render(tenant=tenant, channel=channel, parsed=parsed, override=override)
        problems = []
    except (RenderError, ValueError) as exc:
        content, problems = None, [f"メッセージを作成できません: {exc}"]
    return content, problems + account_problems(tenant=tenant, channel=channel, content=content, now=now)


def account_problems(*, tenant: Tenant, channel: str, content: dict | None, now: datetime) -> list[str]:
    """What stops a post at the tenant's account of `channel`: missing, flagged invalid, expired…"""
    try:
        account = account_for(tenant, channel)
    except PublishFailed as exc:
        return [exc.reason]
    problems = []
    if account.token_invalid_at is not None:
        problems.append(
            f"{CHANNEL_LABELS[channel]} のトークンが無効になっています（{fmt_jst(account.token_invalid_at)} に検知）。"
            f"管理画面の「チャネルアカウント」か manage.py add_channel {tenant.slug} {channel} … で更新してください。"
        )
    return problems + ACCOUNT_CHECKS[channel](account, content, now)

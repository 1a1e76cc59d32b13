"""What the channels that publish one post from the tenant's account (Instagram, TikTok,
HubSpot) share: render and check the post before its first platform call (delivery,
preview, `/automedia send`), and say what was published.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from backlog_bridge.body.task import ParsedTask, TemplateRef
from core.channels import channel_label
from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.channels.models import ChannelPost
from deliveries.channels.placeholders import RenderError
from deliveries.channels.post_templates import describe, render_channel_template
from deliveries.channels.publisher_base import PublishFailed, account_for
from deliveries.channels.registry import channel_part
from deliveries.channels.template_store import template_resolve
from deliveries.models import ContentTask


def post_render(*, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict | None = None) -> dict:
    """The channel template filled with the issue's 文面 / 変数 and validated (RenderError names the field)."""
    override = override or {}
    ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
    if ref is None:
        raise RenderError(["テンプレが指定されていません"])
    template = template_resolve(tenant=tenant, ref=ref, channel=channel)
    return render_channel_template(channel, template.messages, parsed.variables)


def post_content(*, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict | None = None) -> dict:
    """The channel template filled and validated, before anything is sent (errors name the field)."""
    try:
        account_for(tenant, channel)
        return post_render(tenant=tenant, channel=channel, parsed=parsed, override=override)
    except (RenderError, ValueError) as exc:
        raise PublishFailed(f"メッセージを作成できません: {exc}") from exc


def post_message(channel: str, content: dict) -> dict:
    """The post in the shape of a rendered message (as `messages_render` returns it)."""
    return {"type": f"{channel}:{content['type']}", "altText": describe(channel, content), "content": content}


def post_outcome(summary: dict) -> dict:
    """What the run keeps of a published post (its publisher's summary)."""
    return {"post": summary}


def post_outcome_lines(outcome: dict) -> list[str]:
    return outcome["post"]["lines"]


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
            f"{channel_label(channel)} のトークンが無効になっています（{fmt_jst(account.token_invalid_at)} に検知）。"
            f"管理画面の「チャネルアカウント」か manage.py add_channel {tenant.slug} {channel} … で更新してください。"
        )
    return problems + channel_part(channel, "publisher").account_problems(account, content, now)


@dataclass(frozen=True)
class PostParts:
    """What the rest of deliveries asks of a platform post's publisher, for one channel:
    each publisher binds these to its module's names (deliveries/channels/publishing.py)."""

    channel: str

    def render(self, *, tenant: Tenant, parsed: ParsedTask, override: dict) -> dict:
        return post_content(tenant=tenant, channel=self.channel, parsed=parsed, override=override)

    def messages(self, content: dict) -> list[dict]:
        return [post_message(self.channel, content)]

    def send_problems(
        self, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime
    ) -> list[str]:
        return post_check(tenant=tenant, channel=self.channel, parsed=parsed, override=override, now=now)[1]

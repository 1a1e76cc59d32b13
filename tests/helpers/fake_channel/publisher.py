"""The fake channel's publisher: the filled template, "sent" to a list."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask, TemplateRef
from core.models import Tenant
from deliveries.channels.placeholders import RenderError
from deliveries.channels.post_templates import render_channel_template
from deliveries.channels.publisher_base import Context, Done, PublishFailed
from deliveries.channels.template_store import template_resolve

KIND = "fake"
SENT: list[dict] = []


def render(*, tenant: Tenant, parsed: ParsedTask, override: dict) -> dict:
    ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
    try:
        template = template_resolve(tenant=tenant, ref=ref, channel=KIND)
        return render_channel_template(KIND, template.messages, parsed.variables)
    except RenderError as exc:
        raise PublishFailed(f"メッセージを作成できません: {exc}") from exc


def messages(content: dict) -> list[dict]:
    return [{"type": "text", "text": content["text"]}]


def send_problems(*, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> list[str]:
    try:
        render(tenant=tenant, parsed=parsed, override=override)
    except PublishFailed as exc:
        return [exc.reason]
    return []


def publish(ctx: Context) -> Done:
    SENT.append({"issue_key": ctx.task.issue_key, "content": ctx.content, "audience": ctx.audience})
    return Done({"lines": [f"Fake に送りました: {ctx.content['text']}"]})


def outcome(summary: dict) -> dict:
    return {"post": summary}


def outcome_lines(outcome: dict) -> list[str]:
    return outcome["post"]["lines"]

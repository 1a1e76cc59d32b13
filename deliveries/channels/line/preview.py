"""LINE in a preview: the messages exactly as they will be sent, and whom they reach."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from deliveries.channels.line.publisher import audience_plan
from deliveries.channels.preview_base import Preview
from deliveries.channels.publisher_base import PublishFailed
from deliveries.channels.publishing import messages_render


def fill(preview: Preview, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> None:
    try:
        preview.messages = messages_render(tenant=tenant, parsed=parsed, override=override)
    except PublishFailed as exc:
        preview.problems.append(exc.reason)
    try:
        plan = audience_plan(tenant=tenant, expression=override.get("audience") or parsed.audience)
        preview.requests = len(plan)
        preview.recipients = sum(1 if kind == "push" else len(to) for kind, to in plan)
    except PublishFailed as exc:
        preview.problems.append(exc.reason)
    preview.audience = f"{preview.recipients} 件（LINE への送信 {preview.requests} 回）"


def checked(preview: Preview, parsed: ParsedTask) -> None:
    """LINE's verdict and the quota are problems of the preview too."""
    preview.problems += [p for p in preview.checks.problems if p not in preview.problems]


def target(audience: str) -> str:
    return audience

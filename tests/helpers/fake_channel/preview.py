"""The fake channel in a preview: its messages and whom they reach, in words."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from deliveries.channels.preview_base import Preview
from deliveries.channels.publisher_base import PublishFailed
from deliveries.channels.publishing import messages_render


def fill(preview: Preview, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> None:
    try:
        preview.messages = messages_render(tenant=tenant, parsed=parsed, override=override)
    except PublishFailed as exc:
        preview.problems.append(exc.reason)
    preview.audience = target(override.get("audience") or parsed.audience)


def checked(preview: Preview, parsed: ParsedTask) -> None:
    preview.problems += preview.checks.problems


def target(audience: str) -> str:
    return f"Fake の受信者（{audience}）"

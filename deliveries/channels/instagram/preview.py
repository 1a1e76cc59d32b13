"""Instagram in a preview: the post, the account that publishes it, and its public."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from deliveries.channels.preview_base import Preview, post_preview


def fill(preview: Preview, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> None:
    post_preview(preview, tenant=tenant, parsed=parsed, override=override, now=now)
    preview.audience = (
        "アカウントのフォロワーなど（Instagram への投稿は宛先を選ばずに公開されるため、人数は数えません）"
    )


def checked(preview: Preview, parsed: ParsedTask) -> None:
    """The checks' problems are the post's own (post_check), already in the preview."""


def target(audience: str) -> str:
    return "Instagram アカウントへの投稿（フォロワーなどに公開）"

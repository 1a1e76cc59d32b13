"""TikTok in a preview: the post as the init sends it, the creator and the posting choices."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.channels import channel_label
from core.models import Tenant
from deliveries.channels.models import ChannelAccount
from deliveries.channels.preview_base import Preview, post_preview
from deliveries.channels.tiktok import choices


def fill(preview: Preview, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> None:
    """Whom it reaches is said once the approval-time checks asked creator_info (`checked`)."""
    post_preview(preview, tenant=tenant, parsed=parsed, override=override, now=now)


def checked(preview: Preview, parsed: ParsedTask) -> None:
    """The creator (nickname, the privacy levels creator_info allows) and the body's choices."""
    rules = f"{channel_label(ChannelAccount.Channel.TIKTOK)} の投稿ルール"
    checks = preview.checks
    preview.problems += [p for p in checks.problems if not p.startswith(rules) and p not in preview.problems]
    if preview.post is not None and not choices.missing_choices(parsed.tiktok, preview.post["type"]):
        # The post as the init sends it: the template's fields and exactly the body's choices.
        preview.post = {**preview.post, **choices.post_info(preview.post, parsed.tiktok)}
    stated = choices.choices_text(parsed.tiktok) or "配信メタに公開範囲などの指定なし"
    preview.audience = f"{stated}。TikTok への投稿は宛先を選ばないため、人数は数えません"
    if checks.creator is not None:
        preview.account = f"{choices.creator_name(checks.creator)}（{preview.account}）"
        levels = choices.levels_text(list(checks.creator.get("privacy_level_options") or []))
        preview.audience += f"。このクリエイターが使える公開範囲: {levels}"


def target(audience: str) -> str:
    return "TikTok アカウントへの投稿（公開範囲は配信メタの指定）"

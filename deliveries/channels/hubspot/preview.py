"""HubSpot in a preview: the note or email, and the contacts the 対象タグ matches (counted
from the contacts API, read only)."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.audience import AudienceError
from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from deliveries.channels.hubspot.publisher import audience_count
from deliveries.channels.models import ChannelAccount
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.preview_base import Preview, post_preview


def fill(preview: Preview, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> None:
    account = post_preview(preview, tenant=tenant, parsed=parsed, override=override, now=now)
    _audience(preview, account, override.get("audience") or parsed.audience)


def checked(preview: Preview, parsed: ParsedTask) -> None:
    """The checks' problems are the post's own (post_check), already in the preview."""


def target(audience: str) -> str:
    return audience


def _audience(preview: Preview, account: ChannelAccount | None, expression: str) -> None:
    if account is None or account.token_invalid_at is not None or not expression:
        preview.audience = f"HubSpot のコンタクト（対象タグ: {expression or 'なし'}）。アカウントか対象タグが使えないため件数は数えていません"
        return
    where = f"（対象タグ: {expression}、プロパティ {account.hubspot_tag_property}）"
    try:
        count = audience_count(account=account, expression=expression)
    except AudienceError as exc:
        preview.problems.append(f"対象タグを解釈できません: {exc}")
        preview.audience = f"HubSpot のコンタクト{where}"
        return
    except PlatformError as exc:
        preview.audience = (
            f"HubSpot のコンタクト{where}。件数を HubSpot から取得できませんでした（{exc.message}）"
        )
        return
    preview.recipients = count.matched
    if count.matched == 0 and count.complete:
        preview.problems.append(f"対象者がいません（HubSpot のコンタクト、対象タグ: {expression}）")
    more = "" if count.complete else " 以上（途中まで数えました）"
    preview.audience = f"HubSpot のコンタクト {count.matched:,} 件{more}{where}"
    if account.hubspot_mode == ChannelAccount.HubSpotMode.EMAIL:
        preview.audience += "に 1 通ずつメールを送信"
        if count.without_email:
            preview.audience += f"。メールアドレスのない {count.without_email:,} 件には送られません"
    else:
        preview.audience += "に CRM ノート 1 件を関連付け"

"""TikTok at approval time: the posting choices the issue body states, checked against the
creator's `creator_info` (deliveries/channels/tiktok/choices.py holds the rules).

`creator_info` is asked with the account's current access token; an approval never
refreshes a token. When TikTok cannot be asked (no account, an expired token, an error),
the choices are checked for presence only, the comment says so, and the publisher asks
`creator_info` again before its `init`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from core.transport import TransportError
from deliveries.channels.approval_base import ApprovalChecks, post_rules
from deliveries.channels.models import ChannelAccount
from deliveries.channels.tiktok.choices import (
    creator_line,
    creator_problems,
    missing_choices,
    unused_choices,
)
from deliveries.channels.tiktok.transport import TikTokTransport
from deliveries.models import ContentTask


def check(
    checks: ApprovalChecks,
    *,
    tenant: Tenant,
    parsed: ParsedTask,
    override: dict,
    due_at: datetime,
    now: datetime,
    task: ContentTask | None,
) -> None:
    """The template rules, then the body's posting choices against the creator's."""
    content = post_rules(
        checks, tenant=tenant, channel=ChannelAccount.Channel.TIKTOK, parsed=parsed, override=override
    )
    if content is None:
        return
    verdict = tiktok_verdict(tenant=tenant, choices=parsed.tiktok, content=content, now=now)
    checks.lines += verdict.lines
    checks.problems += verdict.problems
    checks.creator = verdict.creator


def counts_others(*, tenant: Tenant) -> bool:
    return False


@dataclass
class TikTokVerdict:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    creator: dict | None = None  # creator_info's data, when TikTok answered


def tiktok_verdict(*, tenant: Tenant, choices: dict, content: dict, now: datetime) -> TikTokVerdict:
    verdict = TikTokVerdict(problems=missing_choices(choices, content["type"]))
    if unused := unused_choices(choices, content["type"]):
        verdict.lines.append(f"TikTok: 写真の投稿には {'・'.join(unused)} がないため使いません")
    info, reason = _creator_info(tenant, now)
    if info is None:
        verdict.lines.append(f"TikTok クリエイター: 未確認（{reason}）。公開範囲は投稿の直前に確認します")
        return verdict
    verdict.creator = info
    verdict.lines.append(creator_line(info))
    verdict.problems += creator_problems(choices, info)
    return verdict


def _creator_info(tenant: Tenant, now: datetime) -> tuple[dict | None, str]:
    account = ChannelAccount.objects.filter(tenant=tenant, channel=ChannelAccount.Channel.TIKTOK).first()
    if account is None or not account.access_token:
        return None, "TikTok のアカウントが設定されていません"
    if account.token_invalid_at is not None:
        return None, "TikTok のトークンが無効になっています"
    if account.expires_at is not None and account.expires_at <= now:
        return None, "アクセストークンが期限切れです（投稿時に更新します）"
    transport = TikTokTransport(token=account.access_token)
    try:
        return transport.creator_info(), ""
    except TransportError as exc:
        return None, f"TikTok に確認できませんでした: {exc.message}"
    finally:
        transport.close()

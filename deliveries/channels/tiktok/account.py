"""TikTok's account as `manage.py add_channel` sets it up and a preview names it."""

from __future__ import annotations

from contextlib import closing

from django.utils import timezone

from core.connections import CheckResult
from deliveries.channels.account_check import account_check
from deliveries.channels.models import ChannelAccount
from deliveries.channels.tiktok.tokens import tiktok_access_token
from deliveries.channels.tiktok.transport import TikTokTransport
from deliveries.channels.token_upkeep import RefreshBusy, RefreshFailed

REQUIRED_ON_CREATE = ("access_token", "open_id")


def described(account: ChannelAccount) -> str:
    return f"open_id {account.open_id}"


def report(account: ChannelAccount) -> dict:
    """Fields of add_channel's JSON beyond the ones every account has."""
    return {}


def report_lines(account: ChannelAccount) -> list[str]:
    """Lines of add_channel's output beyond the token's: the refresh token rotates."""
    return [f"  リフレッシュトークン: {'設定済み' if account.refresh_token else '未設定'}"]


def check(account: ChannelAccount) -> CheckResult:
    """TikTok's `creator_info` (https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info/):
    the creator the token posts as. A saved account's expired token is refreshed first, as a send would."""

    def probe() -> str:
        with closing(TikTokTransport(token=_token(account))) as tt:
            info = tt.creator_info()
        return f"TikTok アカウント: @{info.get('creator_username') or '?'}（{info.get('creator_nickname') or ''}）"

    try:
        return account_check(account, probe)
    except (RefreshFailed, RefreshBusy) as exc:
        return CheckResult("tiktok", ok=False, problem=str(exc) or "TikTok のトークンを更新中です。")


def _token(account: ChannelAccount) -> str:
    if account.pk is None:
        return account.access_token
    return tiktok_access_token(account, now=timezone.now())

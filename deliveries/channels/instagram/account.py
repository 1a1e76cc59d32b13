"""Instagram's account as `manage.py add_channel` sets it up and a preview names it."""

from __future__ import annotations

from contextlib import closing

from core.connections import CheckResult
from core.transport import TransportError
from deliveries.channels.account_check import account_check
from deliveries.channels.instagram.transport import InstagramTransport
from deliveries.channels.models import ChannelAccount

REQUIRED_ON_CREATE = ("access_token", "ig_user_id")


def described(account: ChannelAccount) -> str:
    return f"ig_user_id {account.ig_user_id}"


def report(account: ChannelAccount) -> dict:
    """Fields of add_channel's JSON beyond the ones every account has."""
    return {}


def report_lines(account: ChannelAccount) -> list[str]:
    """Lines of add_channel's output beyond the token's."""
    return []


def check(account: ChannelAccount) -> CheckResult:
    """The IG user's `username` read with the token: both the token and the id must be right."""

    def probe() -> str:
        with closing(InstagramTransport(token=account.access_token)) as graph:
            return f"Instagram アカウント: @{graph.username(account.ig_user_id)}"

    return account_check(account, probe, wrong_account=_wrong_user)


def _wrong_user(exc: TransportError) -> str:
    # Graph API answers code 100 for an object id it cannot reach with this token
    # (https://developers.facebook.com/docs/graph-api/guides/error-handling).
    if getattr(exc, "code", "") == "100":
        return "Instagram ユーザーIDがこのトークンのアカウントではないか、存在しません（--ig-user-id）。"
    return ""

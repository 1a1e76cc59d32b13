"""Instagram's account as `manage.py add_channel` sets it up and a preview names it."""

from __future__ import annotations

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

"""HubSpot's account as `manage.py add_channel` sets it up and a preview names it."""

from __future__ import annotations

from deliveries.channels.models import ChannelAccount

REQUIRED_ON_CREATE = ("access_token",)


def described(account: ChannelAccount) -> str:
    return f"モード: {account.get_hubspot_mode_display()}"


def report(account: ChannelAccount) -> dict:
    """Fields of add_channel's JSON beyond the ones every account has."""
    return {"hubspot_mode": account.hubspot_mode}


def report_lines(account: ChannelAccount) -> list[str]:
    """Lines of add_channel's output beyond the token's."""
    return [f"  モード: {account.get_hubspot_mode_display()}"]

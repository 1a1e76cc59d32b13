"""HubSpot's account as `manage.py add_channel` sets it up and a preview names it."""

from __future__ import annotations

from contextlib import closing

from core.connections import CheckResult
from deliveries.channels.account_check import account_check
from deliveries.channels.hubspot.transport import HubSpotTransport
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


def check(account: ChannelAccount) -> CheckResult:
    """The account's details (`portalId`): the smallest call that proves the token."""

    def probe() -> str:
        with closing(HubSpotTransport(token=account.access_token)) as hs:
            details = hs.account_details()
        return f"HubSpot アカウント: portal {details.get('portalId')}（{details.get('accountType') or '?'}）"

    return account_check(account, probe)

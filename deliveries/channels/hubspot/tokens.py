"""HubSpot's token upkeep: none. Its tokens are static; a 401 means reconnect."""

from __future__ import annotations

from datetime import datetime

from core.models import Tenant
from deliveries.channels.models import ChannelAccount
from deliveries.channels.token_upkeep import account_renewal_advice, account_token_expired


def refresh_due(account: ChannelAccount, now: datetime) -> bool:
    return False


def refresh(account: ChannelAccount, *, now: datetime) -> ChannelAccount:
    return account


def token_expired(*, tenant: Tenant, issue_key: str, reason: str) -> None:
    account_token_expired(
        tenant=tenant, channel=ChannelAccount.Channel.HUBSPOT, issue_key=issue_key, reason=reason
    )


def renewal_advice() -> str:
    return account_renewal_advice(ChannelAccount.Channel.HUBSPOT)

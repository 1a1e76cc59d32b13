"""HubSpot's token upkeep: none. Its tokens are static; a 401 means reconnect."""

from __future__ import annotations

from datetime import datetime

from deliveries.models import ChannelAccount


def refresh_due(account: ChannelAccount, now: datetime) -> bool:
    return False


def refresh(account: ChannelAccount, *, now: datetime) -> ChannelAccount:
    return account

"""Instagram's token upkeep.

Long-lived tokens last 60 days and can be refreshed once they are 24 h old
(https://developers.facebook.com/documentation/instagram-platform/reference/refresh_access_token):
the daily job refreshes them INSTAGRAM_TOKEN_REFRESH_DAYS before they expire.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from core.models import Tenant
from deliveries.channels.instagram.transport import InstagramTransport
from deliveries.channels.models import ChannelAccount
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.token_upkeep import (
    RefreshBusy,
    RefreshFailed,
    account_renewal_advice,
    account_token_expired,
    refresh_claim,
    refresh_release,
    refreshed_store,
    seconds_from,
    token_expired_notice,
)

IG_MIN_AGE = timedelta(hours=24)  # "at least 24 hours old" (refresh_access_token reference)


def refresh_due(account: ChannelAccount, now: datetime) -> bool:
    if account.expires_at is not None and account.expires_at <= now:
        token_expired_notice(
            account=account,
            reason=f"Instagram の長期トークンの有効期限（{account.expires_at:%Y-%m-%d}）が切れています。",
        )
        return False
    window = timedelta(days=settings.INSTAGRAM_TOKEN_REFRESH_DAYS)
    old_enough = account.refreshed_at is None or account.refreshed_at <= now - IG_MIN_AGE
    return old_enough and (account.expires_at is None or account.expires_at <= now + window)


def refresh(account: ChannelAccount, *, now: datetime) -> ChannelAccount:
    if not refresh_claim(account, now):
        raise RefreshBusy()
    fresh = ChannelAccount.objects.select_related("tenant").get(pk=account.pk)
    transport = InstagramTransport(token=fresh.access_token)
    try:
        answer = transport.refresh_token(fresh.access_token)
    except PlatformError as exc:
        refresh_release(fresh)
        if exc.permanent:
            reason = f"Instagram の長期トークンを更新できませんでした: {exc.message}"
            token_expired_notice(account=fresh, reason=reason)
            raise RefreshFailed(reason) from exc
        raise
    finally:
        transport.close()
    refreshed_store(
        fresh,
        now,
        access_token=answer["access_token"],
        expires_at=seconds_from(now, answer.get("expires_in")),
    )
    return fresh


def token_expired(*, tenant: Tenant, issue_key: str, reason: str) -> None:
    account_token_expired(
        tenant=tenant, channel=ChannelAccount.Channel.INSTAGRAM, issue_key=issue_key, reason=reason
    )


def renewal_advice() -> str:
    return account_renewal_advice(ChannelAccount.Channel.INSTAGRAM)

"""TikTok's token upkeep.

Access tokens are short-lived and every refresh returns a NEW refresh token; the old one
stops working (https://developers.tiktok.com/docs/en/oauth-refresh-a-user-access-token).
So refreshes are single-flight per account (deliveries/channels/token_upkeep.py `refresh_claim`), the
refresh token is re-read after the lease is taken, and the new pair is stored in the same
UPDATE that frees the lease.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from core.models import Tenant
from deliveries.channels.models import ChannelAccount
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.tiktok.transport import TikTokTransport
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

TIKTOK_MARGIN = timedelta(minutes=5)  # refresh before use when the access token expires this soon
TIKTOK_DAILY_WINDOW = timedelta(days=1)


def refresh_due(account: ChannelAccount, now: datetime) -> bool:
    if not account.refresh_token:
        return False
    if account.refresh_expires_at is not None and account.refresh_expires_at <= now:
        token_expired_notice(
            account=account, reason="TikTok のリフレッシュトークンの有効期限が切れています。"
        )
        return False
    return account.expires_at is None or account.expires_at <= now + TIKTOK_DAILY_WINDOW


def tiktok_access_token(account: ChannelAccount, *, now: datetime, force: bool = False) -> str:
    """A usable access token: the stored one, or a fresh one when it (nearly) expired."""
    if not force and account.expires_at is not None and account.expires_at > now + TIKTOK_MARGIN:
        return account.access_token
    if not account.refresh_token:
        if force or (account.expires_at is not None and account.expires_at <= now):
            reason = "TikTok のアクセストークンが期限切れか無効で、リフレッシュトークンがありません。"
            token_expired_notice(account=account, reason=reason)
            raise RefreshFailed(reason)
        return account.access_token
    return refresh(account, now=now).access_token


def refresh(account: ChannelAccount, *, now: datetime) -> ChannelAccount:
    """One refresh; raises RefreshBusy, RefreshFailed, or PlatformError (transient: retry later)."""
    if not refresh_claim(account, now):
        raise RefreshBusy()
    fresh = ChannelAccount.objects.select_related("tenant").get(pk=account.pk)  # the newest refresh token
    try:
        answer = _tiktok_call(fresh)
    except PlatformError as exc:
        refresh_release(fresh)
        if exc.permanent:
            reason = f"TikTok のトークンを更新できませんでした: {exc.message}"
            token_expired_notice(account=fresh, reason=reason)
            raise RefreshFailed(reason) from exc
        raise
    refreshed_store(
        fresh,
        now,
        access_token=answer["access_token"],
        refresh_token=answer.get("refresh_token") or fresh.refresh_token,
        expires_at=now + timedelta(seconds=int(answer.get("expires_in") or 0)),
        refresh_expires_at=seconds_from(now, answer.get("refresh_expires_in")) or fresh.refresh_expires_at,
    )
    return fresh


def _tiktok_call(account: ChannelAccount) -> dict:
    if not settings.TIKTOK_CLIENT_KEY or not settings.TIKTOK_CLIENT_SECRET:
        raise PlatformError(
            "TIKTOK_CLIENT_KEY / TIKTOK_CLIENT_SECRET が設定されていないため更新できません。", permanent=True
        )
    transport = TikTokTransport()
    try:
        return transport.refresh(
            client_key=settings.TIKTOK_CLIENT_KEY,
            client_secret=settings.TIKTOK_CLIENT_SECRET,
            refresh_token=account.refresh_token,
        )
    finally:
        transport.close()


def token_expired(*, tenant: Tenant, issue_key: str, reason: str) -> None:
    account_token_expired(
        tenant=tenant, channel=ChannelAccount.Channel.TIKTOK, issue_key=issue_key, reason=reason
    )


def renewal_advice() -> str:
    return account_renewal_advice(ChannelAccount.Channel.TIKTOK)

"""Token upkeep of the Instagram / TikTok / HubSpot accounts, and the token-expired notice.

- Instagram long-lived tokens last 60 days and can be refreshed once they are 24 h old
  (https://developers.facebook.com/documentation/instagram-platform/reference/refresh_access_token):
  the daily job refreshes them INSTAGRAM_TOKEN_REFRESH_DAYS before they expire.
- TikTok access tokens are short-lived and every refresh returns a NEW refresh token;
  the old one stops working (https://developers.tiktok.com/docs/en/oauth-refresh-a-user-access-token).
  So refreshes are single-flight per account (a lease on the row, taken by a conditional
  UPDATE), the refresh token is re-read after the lease is taken, and the new pair is
  stored in the same UPDATE that frees the lease.
- HubSpot tokens are static: nothing to refresh; a 401 means reconnect.

A refresh that is refused, or an auth error while publishing, marks the account
(`token_invalid_at`) and mails the operators (the token-expired notice).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import mail_admins
from django.db.models import Q
from django.utils import timezone

from deliveries.channels.instagram.transport import InstagramTransport
from deliveries.channels.platform import PlatformError
from deliveries.channels.tiktok.transport import TikTokTransport
from deliveries.models import ChannelAccount, Tenant

logger = logging.getLogger(__name__)

REFRESH_LEASE = timedelta(seconds=60)
IG_MIN_AGE = timedelta(hours=24)  # "at least 24 hours old" (refresh_access_token reference)
TIKTOK_MARGIN = timedelta(minutes=5)  # refresh before use when the access token expires this soon
TIKTOK_DAILY_WINDOW = timedelta(days=1)


class RefreshFailed(Exception):
    """The platform refused the refresh: the account must be reconnected (notice sent)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class RefreshBusy(Exception):
    """Another process is refreshing this account right now."""


def token_expired_notice(*, account: ChannelAccount, reason: str, issue_key: str = "") -> None:
    """Flag the account and mail the operators, once until a new token is saved."""
    now = timezone.now()
    first = ChannelAccount.objects.filter(pk=account.pk, token_invalid_at__isnull=True).update(
        token_invalid_at=now
    )
    account.token_invalid_at = now
    label, tenant = account.get_channel_display(), account.tenant
    if not first:
        return  # already told; each failed task also says so in its Backlog comment
    mail_admins(
        f"[automedia] {label} トークンの更新が必要です（{tenant.name}）",
        f"テナント {tenant.slug} の {label} アカウントのトークンが期限切れか無効です。\n"
        + (f"課題: {issue_key}\n" if issue_key else "")
        + f"理由: {reason}\n"
        "管理画面の「チャネルアカウント」または manage.py add_channel でトークンを更新してください。",
    )


def account_token_expired(*, tenant: Tenant, channel: str, issue_key: str, reason: str) -> None:
    """A publish failed on auth: flag the tenant's account of `channel` (if it still has one)."""
    account = ChannelAccount.objects.filter(tenant=tenant, channel=channel).first()
    if account is not None:
        token_expired_notice(account=account, reason=reason, issue_key=issue_key)


# -- TikTok ------------------------------------------------------------------------------


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
    return tiktok_refresh(account, now=now).access_token


def tiktok_refresh(account: ChannelAccount, *, now: datetime) -> ChannelAccount:
    """One refresh; raises RefreshBusy, RefreshFailed, or PlatformError (transient: retry later)."""
    if not _claim(account, now):
        raise RefreshBusy()
    fresh = ChannelAccount.objects.select_related("tenant").get(pk=account.pk)  # the newest refresh token
    try:
        answer = _tiktok_call(fresh)
    except PlatformError as exc:
        _unclaim(fresh)
        if exc.permanent:
            reason = f"TikTok のトークンを更新できませんでした: {exc.message}"
            token_expired_notice(account=fresh, reason=reason)
            raise RefreshFailed(reason) from exc
        raise
    _store(
        fresh,
        now,
        access_token=answer["access_token"],
        refresh_token=answer.get("refresh_token") or fresh.refresh_token,
        expires_at=now + timedelta(seconds=int(answer.get("expires_in") or 0)),
        refresh_expires_at=_maybe_in(now, answer.get("refresh_expires_in")) or fresh.refresh_expires_at,
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


# -- Instagram ---------------------------------------------------------------------------


def instagram_refresh(account: ChannelAccount, *, now: datetime) -> ChannelAccount:
    if not _claim(account, now):
        raise RefreshBusy()
    fresh = ChannelAccount.objects.select_related("tenant").get(pk=account.pk)
    transport = InstagramTransport(token=fresh.access_token)
    try:
        answer = transport.refresh_token(fresh.access_token)
    except PlatformError as exc:
        _unclaim(fresh)
        if exc.permanent:
            reason = f"Instagram の長期トークンを更新できませんでした: {exc.message}"
            token_expired_notice(account=fresh, reason=reason)
            raise RefreshFailed(reason) from exc
        raise
    finally:
        transport.close()
    _store(
        fresh,
        now,
        access_token=answer["access_token"],
        expires_at=_maybe_in(now, answer.get("expires_in")),
    )
    return fresh


# -- the daily job ---------------------------------------------------------------------


def channel_tokens_upkeep(*, now: datetime | None = None) -> dict[str, int]:
    """Refresh what is due; returns counts by result (refreshed / failed / skipped / error)."""
    now = now or timezone.now()
    counts = {"refreshed": 0, "failed": 0, "skipped": 0, "error": 0}
    accounts = ChannelAccount.objects.select_related("tenant").filter(
        tenant__is_active=True, token_invalid_at__isnull=True
    )
    for account in accounts:
        counts[_upkeep_one(account, now)] += 1
    return counts


def _upkeep_one(account: ChannelAccount, now: datetime) -> str:
    refresh = {ChannelAccount.Channel.INSTAGRAM: _instagram_due, ChannelAccount.Channel.TIKTOK: _tiktok_due}
    due = refresh.get(account.channel)
    if due is None or not due(account, now):
        return "skipped"
    try:
        if account.channel == ChannelAccount.Channel.INSTAGRAM:
            instagram_refresh(account, now=now)
        else:
            tiktok_refresh(account, now=now)
    except RefreshBusy:
        return "skipped"
    except RefreshFailed:
        return "failed"
    except PlatformError as exc:
        logger.warning("token refresh of %s failed, next run retries: %s", account, exc.message)
        return "error"
    return "refreshed"


def _instagram_due(account: ChannelAccount, now: datetime) -> bool:
    if account.expires_at is not None and account.expires_at <= now:
        token_expired_notice(
            account=account,
            reason=f"Instagram の長期トークンの有効期限（{account.expires_at:%Y-%m-%d}）が切れています。",
        )
        return False
    window = timedelta(days=settings.INSTAGRAM_TOKEN_REFRESH_DAYS)
    old_enough = account.refreshed_at is None or account.refreshed_at <= now - IG_MIN_AGE
    return old_enough and (account.expires_at is None or account.expires_at <= now + window)


def _tiktok_due(account: ChannelAccount, now: datetime) -> bool:
    if not account.refresh_token:
        return False
    if account.refresh_expires_at is not None and account.refresh_expires_at <= now:
        token_expired_notice(
            account=account, reason="TikTok のリフレッシュトークンの有効期限が切れています。"
        )
        return False
    return account.expires_at is None or account.expires_at <= now + TIKTOK_DAILY_WINDOW


# -- helpers ---------------------------------------------------------------------------


def _claim(account: ChannelAccount, now: datetime) -> bool:
    free = Q(refresh_lease_until__isnull=True) | Q(refresh_lease_until__lte=now)
    return (
        ChannelAccount.objects.filter(free, pk=account.pk).update(refresh_lease_until=now + REFRESH_LEASE)
        == 1
    )


def _unclaim(account: ChannelAccount) -> None:
    ChannelAccount.objects.filter(pk=account.pk).update(refresh_lease_until=None)


def _store(account: ChannelAccount, now: datetime, **fields) -> None:
    """The new token (and rotated refresh token) and the freed lease in one UPDATE."""
    fields.update(refreshed_at=now, token_invalid_at=None, refresh_lease_until=None)
    ChannelAccount.objects.filter(pk=account.pk).update(**fields)
    for name, value in fields.items():
        setattr(account, name, value)


def _maybe_in(now: datetime, seconds: object) -> datetime | None:
    try:
        return now + timedelta(seconds=int(seconds)) if seconds else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None

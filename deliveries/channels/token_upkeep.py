"""Token upkeep of the Instagram / TikTok / HubSpot accounts, and the token-expired notice.

The daily job and what the channels share; each channel's refresh, and its platform's token
rules, are deliveries/channels/<kind>/tokens.py (`refresh_due`, `refresh`). A refused
refresh, or an auth error while publishing, marks the account (`token_invalid_at`), mails
the operators and sends `deliveries.signals.token_expired` (linepush tells the 連絡グループ).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.core.mail import mail_admins
from django.utils import timezone

from core.channels import channel_label
from core.connections import connection_denied
from core.due import Lease, claim_one, release
from core.models import Tenant
from deliveries.channels.models import ChannelAccount
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.registry import channel_part
from deliveries.signals import token_expired

logger = logging.getLogger(__name__)

# One refresh at a time per account: TikTok's refresh token changes with every refresh.
REFRESH_LEASE = timedelta(seconds=60)
REFRESH_CLAIM = Lease(length=REFRESH_LEASE, until="refresh_lease_until", owner=None)


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
    problem = (
        f"{label} のトークンが期限切れか無効です（{reason}）。新しいトークンを発行し、"
        f"manage.py add_channel {tenant.slug} {account.channel}（または管理画面のチャネルアカウント）で保存してください。"
    )
    connection_denied(tenant_id=tenant.pk, platform=account.channel, problem=problem)
    token_expired.send(
        ChannelAccount, tenant=tenant, channel=account.channel, issue_key=issue_key, reason=reason
    )
    if not first:
        return  # already told; each failed task also says so in its Backlog comment
    mail_admins(
        f"[automedia] {label} トークンの更新が必要です（{tenant.name}）",
        f"テナント {tenant.slug} の {label} アカウントのトークンが期限切れか無効です。\n"
        + (f"課題: {issue_key}\n" if issue_key else "")
        + f"理由: {reason}\n"
        "管理画面の「チャネルアカウント」または manage.py add_channel でトークンを更新してください。",
    )


def channel_token_expired(*, tenant: Tenant, channel: str, issue_key: str, reason: str) -> None:
    """A publish failed on auth: the channel flags its token and tells."""
    channel_part(channel, "tokens").token_expired(tenant=tenant, issue_key=issue_key, reason=reason)


def renewal_advice(channel: str) -> str:
    """What a person does about an expired token of `channel` (the write-back comment)."""
    return channel_part(channel, "tokens").renewal_advice()


def account_renewal_advice(channel: str) -> str:
    """An account channel's `renewal_advice`."""
    return (
        f"{channel_label(channel)} のトークンが期限切れか無効です。管理画面の「チャネルアカウント」か"
        " manage.py add_channel でトークンを更新してから、もう一度承認してください。"
    )


def account_token_expired(*, tenant: Tenant, channel: str, issue_key: str, reason: str) -> None:
    """An account channel's `token_expired`: flag the tenant's account (if it still has one)."""
    account = ChannelAccount.objects.filter(tenant=tenant, channel=channel).first()
    if account is not None:
        token_expired_notice(account=account, reason=reason, issue_key=issue_key)


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
    tokens = channel_part(account.channel, "tokens")
    if not tokens.refresh_due(account, now):
        return "skipped"
    try:
        tokens.refresh(account, now=now)
    except RefreshBusy:
        return "skipped"
    except RefreshFailed:
        return "failed"
    except PlatformError as exc:
        logger.warning("token refresh of %s failed, next run retries: %s", account, exc.message)
        return "error"
    return "refreshed"


# -- helpers ---------------------------------------------------------------------------


def refresh_claim(account: ChannelAccount, now: datetime) -> bool:
    return claim_one(ChannelAccount, pk=account.pk, now=now, lease=REFRESH_CLAIM)


def refresh_release(account: ChannelAccount) -> None:
    release(ChannelAccount, pk=account.pk, lease=REFRESH_CLAIM)


def refreshed_store(account: ChannelAccount, now: datetime, **fields) -> None:
    """The new token (and rotated refresh token) and the freed lease in one UPDATE."""
    fields.update(refreshed_at=now, token_invalid_at=None, **REFRESH_CLAIM.freed())
    ChannelAccount.objects.filter(pk=account.pk).update(**fields)
    for name, value in fields.items():
        setattr(account, name, value)


def seconds_from(now: datetime, seconds: object) -> datetime | None:
    try:
        return now + timedelta(seconds=int(seconds)) if seconds else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None

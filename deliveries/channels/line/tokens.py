"""LINE's token upkeep: the tenant's channel access token is set by a manager, never refreshed
here; an auth failure marks it invalid and tells the admins."""

from __future__ import annotations

from django.core.mail import mail_admins
from django.utils import timezone

from core.models import Tenant
from deliveries.signals import token_expired as token_expired_signal
from line.services import token_refused


def token_expired(*, tenant: Tenant, issue_key: str, reason: str) -> None:
    """A publish failed on auth: flag the tenant's token, mail the operators and tell."""
    Tenant.objects.filter(pk=tenant.pk).update(line_token_invalid_at=timezone.now())
    token_refused(tenant_id=tenant.pk)
    mail_admins(
        f"[automedia] LINE トークンの更新が必要です（{tenant.name}）",
        f"テナント {tenant.slug} の LINE チャネルへの配信が認証エラーで失敗しました。\n"
        f"課題: {issue_key}\n理由: {reason}\n管理画面でチャネルアクセストークンを更新してください。",
    )
    token_expired_signal.send(Tenant, tenant=tenant, channel="line", issue_key=issue_key, reason=reason)


def renewal_advice() -> str:
    return "LINE チャネルのトークンが期限切れか無効です。管理画面でトークンを更新してから、もう一度承認してください。"

"""The API tokens of `POST /api/linepush/items/`: how other systems queue group posts.
Django loads this model through linepush/models.py."""

from __future__ import annotations

import hashlib
import secrets

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.models import Tenant
from line.models import Trigger
from linepush.settings_models import validate_triggers

API_TOKEN_PREFIX = "lp_"


def api_token_hash(token: str) -> str:
    # The token is 256 random bits: a plain SHA-256 is enough (no password stretching needed).
    return hashlib.sha256(token.encode()).hexdigest()


def default_api_triggers() -> list[str]:
    # What the API is for by default: an outside system's signal (seed 003).
    return [Trigger.SIGNAL_APPROVED.value]


class LineApiToken(models.Model):
    """A tenant's token for `POST /api/linepush/items/`; only its hash is stored.

    A token posts only the trigger types it lists, and its posts wait for a manager's
    approval unless `skip_approval` is set (then the tenant's trigger policies decide, as
    for automedia's own posts).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_api_tokens")
    name = models.CharField(_("名前"), max_length=100)
    prefix = models.CharField(_("先頭"), max_length=16, help_text=_("識別用（トークンの先頭）"))
    allowed_triggers = models.JSONField(
        _("使えるトリガー"),
        default=default_api_triggers,
        validators=[validate_triggers],
        help_text=_("このトークンで投稿できるトリガーの種類"),
    )
    skip_approval = models.BooleanField(
        _("承認なしで投稿"),
        default=False,
        help_text=_(
            "オフ（既定）= このトークンの投稿はすべてマネージャーの承認待ちになります。"
            "オン = テナントのトリガー承認設定に従います"
        ),
    )
    token_hash = models.CharField(max_length=64, unique=True)
    last_used_at = models.DateTimeField(_("最終使用日時"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("無効化日時"), null=True, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 投稿 API トークン")
        verbose_name_plural = pgettext_lazy("models", "LINE 投稿 API トークン")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(
        cls, *, tenant: Tenant, name: str, triggers: list[str] | None = None, skip_approval: bool = False
    ) -> tuple[LineApiToken, str]:
        """A new token; the plain text is returned once and never stored."""
        plain = API_TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls(
            tenant=tenant,
            name=name,
            prefix=plain[:10],
            token_hash=api_token_hash(plain),
            allowed_triggers=default_api_triggers() if triggers is None else triggers,
            skip_approval=skip_approval,
        )
        validate_triggers(row.allowed_triggers)
        row.save(force_insert=True)
        return row, plain

    def refusal(self, trigger_type: str) -> str:
        """Why this token may not post this trigger type; empty when it may."""
        if trigger_type in self.allowed_triggers:
            return ""
        allowed = ", ".join(self.allowed_triggers) or "なし"
        return f"このトークンでは trigger_type「{trigger_type}」は使えません（使えるもの: {allowed}）。"

    def revoke(self) -> bool:
        """Revoke for good; False when it was already revoked (nothing un-revokes a token)."""
        now = timezone.now()
        if LineApiToken.objects.filter(pk=self.pk, revoked_at__isnull=True).update(revoked_at=now) != 1:
            return False
        self.revoked_at = now
        return True

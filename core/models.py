"""Tenancy: tenants (a Backlog project and its integrations) and who may see and act on
which tenant. Every other app's rows hang off a Tenant.

Both models moved here from `deliveries` and `console` with state-only migrations: their
tables keep the names they were created with (`db_table`).
"""

from __future__ import annotations

import re
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.backlog_url import validate_base_url
from core.channels import CHANNELS
from core.crypto import EncryptedTextField
from core.quiet_hours import QuietHours


def new_webhook_token() -> str:
    return secrets.token_urlsafe(32)


def validate_quiet_hours(value: dict) -> None:
    QuietHours.from_config(value)


# The most sends of one tenant claimed at once that a superuser may set (five times the
# default): more is a typo, and would let one tenant's burst fill the deliverers' queue.
MAX_CONCURRENT_DELIVERIES_LIMIT = 1000


def validate_max_concurrent_deliveries(value: int) -> None:
    if value is not None and not 1 <= value <= MAX_CONCURRENT_DELIVERIES_LIMIT:
        raise ValidationError(
            _("同時配信数の上限は 1〜%(limit)d で指定してください。")
            % {"limit": MAX_CONCURRENT_DELIVERIES_LIMIT}
        )


# An operator entry says which Backlog identifier it is: `id:1001` (the numeric user id)
# or `user:yamada` (the userId, the login id). A bare `1001` could be either, and a userId
# may be all digits.
OPERATOR_ENTRY = re.compile(r"id:[1-9][0-9]{0,18}|user:[^\s:]{1,100}")


def validate_operators(value: list) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError(_("操作を許可するユーザーは文字列のリストで指定してください。"))
    untyped = [v for v in value if not OPERATOR_ENTRY.fullmatch(v)]
    if untyped:
        raise ValidationError(
            _(
                "「%(entries)s」は使えません。id:1001（数値のユーザーID）または user:yamada（userId）と書いてください。"
            )
            % {"entries": "」「".join(untyped)}
        )


def operator_entry(old: str) -> str:
    """The typed entry of an untyped one: digits were a numeric user id, the rest a userId."""
    if OPERATOR_ENTRY.fullmatch(old):
        return old
    return f"id:{old}" if old.isdigit() else f"user:{old}"


DEFAULT_MAX_CONCURRENT_DELIVERIES = 200

# A host name as a browser's address bar holds it (an optional port): no scheme, path or
# wildcard. Each host lands in the page's Content-Security-Policy header, so nothing else may.
IMAGE_HOST = re.compile(
    r"(?=.{1,253}(:|$))[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[1-9][0-9]{0,4})?"
)
MAX_IMAGE_HOSTS = 50


def image_host_lines(value: str) -> list[str]:
    return [line.strip().lower() for line in (value or "").splitlines() if line.strip()]


def validate_image_hosts(value: str) -> None:
    hosts = image_host_lines(value)
    wrong = [h for h in hosts if not IMAGE_HOST.fullmatch(h)]
    if wrong:
        raise ValidationError(
            _("「%(hosts)s」はホスト名ではありません。1 行に 1 つ、cdn.example.jp のように書いてください。")
            % {"hosts": "」「".join(wrong)}
        )
    if len(hosts) > MAX_IMAGE_HOSTS:
        raise ValidationError(_("ホストは %(limit)d 件までです。") % {"limit": MAX_IMAGE_HOSTS})


class Tenant(models.Model):
    class PublishTimePolicy(models.TextChoices):
        INVALIDATE = "invalidate", _("承認を取り消す（invalidate）")
        RESCHEDULE = "reschedule", _("新しい時刻で予約し直す（reschedule）")

    slug = models.SlugField(_("スラッグ"), unique=True)
    name = models.CharField(_("名前"), max_length=200)
    # The API key is sent to this host: a space's own, or one listed in BACKLOG_ALLOWED_HOSTS.
    backlog_base_url = models.URLField(
        "Backlog URL", help_text=_("例: https://acme.backlog.jp"), validators=[validate_base_url]
    )
    backlog_api_key = EncryptedTextField(_("Backlog APIキー"))
    backlog_project_key = models.CharField(_("Backlog プロジェクトキー"), max_length=64)
    webhook_token = EncryptedTextField(_("Webhook トークン"), default=new_webhook_token)
    line_channel_token = EncryptedTextField(_("LINE チャネルアクセストークン"), blank=True, default="")
    line_channel_secret = EncryptedTextField(_("LINE チャネルシークレット"), blank=True, default="")
    operators = models.JSONField(
        _("コメントコマンドを許可するユーザー"),
        default=list,
        blank=True,
        validators=[validate_operators],
        help_text=_(
            "1 件ずつ id:1001（Backlog の数値のユーザーID）または user:yamada（userId = ログインID）"
            "と種類を付けて書きます。表示名は一意ではないため一致しません。"
        ),
    )
    quiet_hours = models.JSONField(
        _("静粛時間帯"), default=dict, blank=True, validators=[validate_quiet_hours]
    )
    publish_time_policy = models.CharField(
        _("投稿日時変更時の動作"),
        max_length=16,
        choices=PublishTimePolicy.choices,
        default=PublishTimePolicy.INVALIDATE,
    )
    # Sends of this tenant claimed at once (queued for or running on the deliverers): room for
    # a whole campaign due at one second, and a bound that keeps one tenant's burst from
    # filling the queue ahead of another tenant's post due at the same second.
    max_concurrent_deliveries = models.PositiveSmallIntegerField(
        _("同時配信数の上限"), default=DEFAULT_MAX_CONCURRENT_DELIVERIES
    )
    # A preview loads an image at once only from these hosts; any other waits for a click
    # (console/preview_images.py): an image's host learns who looked, and when.
    preview_image_hosts = models.TextField(
        _("プレビューで画像をすぐ表示するホスト"),
        blank=True,
        default="",
        validators=[validate_image_hosts],
        help_text=_(
            "1 行に 1 つ（例: cdn.example.jp）。ここにないホストの画像は、プレビューで"
            "「画像を表示」を押したときだけ読み込みます。"
        ),
    )
    # Set when LINE answers 401/403: the token needs renewing (shown in the admin).
    line_token_invalid_at = models.DateTimeField(_("LINE トークン無効検知"), null=True, blank=True)
    last_activity_id = models.BigIntegerField(_("取り込み済みの最新アクティビティID"), null=True, blank=True)
    is_active = models.BooleanField(_("有効"), default=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        db_table = "deliveries_tenant"  # moved from deliveries (state-only migrations)
        verbose_name = pgettext_lazy("model", "テナント")
        verbose_name_plural = pgettext_lazy("models", "テナント")
        ordering = ["slug"]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    def quiet_hours_config(self) -> QuietHours:
        return QuietHours.from_config(self.quiet_hours)

    def image_hosts(self) -> frozenset[str]:
        return frozenset(image_host_lines(self.preview_image_hosts))

    def is_operator(self, user: dict | None) -> bool:
        """Is this Backlog user (a comment's createdUser, as the API reports it) allowed to
        run comment commands? By numeric id (`id:…`) or userId (`user:…`) only: a display
        name is not unique, and any member of the space can take one."""
        if not user:
            return False
        ids = {f"id:{user.get('id') or ''}", f"user:{user.get('userId') or ''}"} - {"id:", "user:"}
        return bool(set(self.operators) & ids)


class TenantMembership(models.Model):
    """A staff user belongs to a tenant as a manager (may act) or a viewer (may only look)."""

    class Role(models.TextChoices):
        MANAGER = "manager", _("マネージャー（操作可）")
        VIEWER = "viewer", _("閲覧のみ")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="tenant_memberships",
        verbose_name=_("ユーザー"),
    )
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("テナント")
    )
    role = models.CharField(_("役割"), max_length=16, choices=Role.choices, default=Role.MANAGER)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)

    class Meta:
        db_table = "console_tenantmembership"  # moved from console (state-only migrations)
        verbose_name = pgettext_lazy("model", "テナントメンバー")
        verbose_name_plural = pgettext_lazy("models", "テナントメンバー")
        ordering = ["tenant__slug", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="uniq_tenant_membership")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant.slug} ({self.role})"


class Connection(models.Model):
    """One platform of a tenant as last seen: by a connection check (setup, `check_connections`,
    「今すぐ確認」) or by a refusal at run time (a 401/403). A failing row is on 要対応 with its
    fix until a check passes."""

    # Backlog, then each channel.
    Platform = models.TextChoices(
        "Platform",
        [("BACKLOG", ("backlog", "Backlog"))]
        + [(kind.upper(), (kind, c.label)) for kind, c in CHANNELS.items()],
    )

    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="connections", verbose_name=_("テナント")
    )
    platform = models.CharField(_("接続先"), max_length=16, choices=Platform.choices)
    ok = models.BooleanField(_("接続OK"), default=False)
    problem = models.TextField(_("問題と直し方"), blank=True, default="")
    # What works but is still to be set up (with the command that does it), and what the check found.
    notes = models.JSONField(_("補足"), default=list, blank=True)
    checked_at = models.DateTimeField(_("最終確認日時"), null=True, blank=True)
    failed_at = models.DateTimeField(_("失敗を検知した日時"), null=True, blank=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "接続状況")
        verbose_name_plural = pgettext_lazy("models", "接続状況")
        ordering = ["tenant__slug", "platform"]
        constraints = [models.UniqueConstraint(fields=["tenant", "platform"], name="uniq_tenant_connection")]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.get_platform_display()}: {'OK' if self.ok else 'NG'}"

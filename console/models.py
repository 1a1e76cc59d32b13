"""Who may see and act on which tenant, and the records the dashboard reads.

Everything a person does in the admin is written to Django's own `LogEntry`
(`console.audit`), so it appears on the object's page and in its history.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from deliveries.models import ContentTask, Tenant
from linepush.models import LinePushItem


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
        verbose_name = pgettext_lazy("model", "テナントメンバー")
        verbose_name_plural = pgettext_lazy("models", "テナントメンバー")
        ordering = ["tenant__slug", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="uniq_tenant_membership")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant.slug} ({self.role})"


class DeliveryOutcome(models.Model):
    """How one run of a delivery ended: the dashboard's outcomes per day."""

    class Kind(models.TextChoices):
        SENT = "sent", _("送信済み")
        FAILED = "failed", _("失敗")
        SKIPPED = "skipped", _("スキップ")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", verbose_name=_("テナント"))
    task = models.ForeignKey(
        ContentTask, on_delete=models.CASCADE, related_name="outcomes", verbose_name=_("コンテンツ課題")
    )
    kind = models.CharField(_("結果"), max_length=16, choices=Kind.choices)
    detail = models.CharField(_("詳細"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("日時"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "配信結果")
        verbose_name_plural = pgettext_lazy("models", "配信結果")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.task.issue_key} {self.kind}"


class ScanRun(models.Model):
    """The summary of one safety-net scan (`scan_backlog` or the daily job)."""

    dry_run = models.BooleanField(_("確認のみ（dry run）"), default=False)
    totals = models.JSONField(_("合計"), default=dict)
    # One ScanResult.to_json() per tenant; the dashboard shows each manager their own.
    results = models.JSONField(_("テナントごとの結果"), default=list)
    created_at = models.DateTimeField(_("実行日時"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "取りこぼしスキャン")
        verbose_name_plural = pgettext_lazy("models", "取りこぼしスキャン")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"scan {self.created_at:%Y-%m-%d %H:%M} leaks={self.totals.get('leaks', 0)}"


class PushApproval(LinePushItem):
    """The 承認待ち page: LINE group posts waiting for a manager (a view of LinePushItem)."""

    class Meta:
        proxy = True
        verbose_name = pgettext_lazy("model", "承認待ちの LINE 投稿")
        verbose_name_plural = pgettext_lazy("models", "承認待ちの LINE 投稿")

"""The records the dashboard reads, and the 承認待ち page's view of LINE group posts.

Who may see and act on which tenant is `core.models.TenantMembership`.

Everything a person does in the admin is written to Django's own `LogEntry`
(`console.audit`), so it appears on the object's page and in its history.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.notice_models import AttentionNotice, LineTestRecipient, NoticeSettings  # noqa: F401
from core.models import Tenant
from deliveries.models import ContentTask
from linepush.models import LinePushItem


class DeliveryOutcome(models.Model):
    """How one run of a delivery ended, or why its approval was refused: the dashboard's records."""

    class Kind(models.TextChoices):
        SENT = "sent", _("送信済み")
        FAILED = "failed", _("失敗")
        SKIPPED = "skipped", _("スキップ")
        # An approval refused before any request (the body, the quiet hours, the checks).
        REFUSED = "refused", _("承認不可")

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
        return f"{self.task.issue_key} {self.get_kind_display()}"


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

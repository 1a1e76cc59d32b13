"""Backlog webhook events, stored raw and deduplicated before anything acts on them."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.models import Tenant
from core.records import StoredWebhookEvent

# Activity types automedia acts on (`ActivityType` in nulab/backlog-js:src/types.ts).
TYPE_CREATED = 1
TYPE_UPDATED = 2
TYPE_COMMENTED = 3
TYPE_DELETED = 4
TYPE_BULK_UPDATED = 14
TYPE_DATES_UPDATED = 35  # `IssuesDatesUpdated`: the dates of several issues changed at once
HANDLED_TYPES = {
    TYPE_CREATED,
    TYPE_UPDATED,
    TYPE_COMMENTED,
    TYPE_DELETED,
    TYPE_BULK_UPDATED,
    TYPE_DATES_UPDATED,
}


class BacklogEvent(StoredWebhookEvent):
    class Source(models.TextChoices):
        WEBHOOK = "webhook", "Webhook"
        CATCHUP = "catchup", _("取りこぼし回収")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="backlog_events")
    activity_id = models.BigIntegerField(_("アクティビティID"))
    type = models.PositiveSmallIntegerField(_("種別"))
    issue_key = models.CharField(_("課題キー"), max_length=64, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.WEBHOOK)

    class Meta(StoredWebhookEvent.Meta):
        verbose_name = pgettext_lazy("model", "Backlog イベント")
        verbose_name_plural = pgettext_lazy("models", "Backlog イベント")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "activity_id"], name="uniq_backlog_activity")
        ]
        indexes = [models.Index(fields=["outcome", "received_at"])]

    def __str__(self) -> str:
        return gettext("Backlog の更新 %(id)s（%(key)s）") % {
            "id": self.activity_id,
            "key": self.issue_key or "-",
        }


class CommandRun(models.Model):
    """A `/automedia …` comment command that ran: the audit trail and the once-only guard."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="command_runs")
    issue_key = models.CharField(_("課題キー"), max_length=64)
    comment_id = models.BigIntegerField(_("コメントID"))
    verb = models.CharField(_("コマンド"), max_length=16)
    args = models.JSONField(_("引数"), default=dict, blank=True)
    user = models.JSONField(_("実行者"), default=dict, blank=True)
    result = models.TextField(_("結果"), blank=True)
    created_at = models.DateTimeField(_("日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "コメントコマンド")
        verbose_name_plural = pgettext_lazy("models", "コメントコマンド")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "comment_id", "verb"], name="uniq_command_run")
        ]

    def __str__(self) -> str:
        return f"{self.issue_key} /automedia {self.verb}"


class AIReview(models.Model):
    """An advisory AI review of a preview, with its cost in tokens."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="ai_reviews")
    issue_key = models.CharField(_("課題キー"), max_length=64)
    model = models.CharField(_("モデル"), max_length=100)
    ok = models.BooleanField(_("成功"), default=False)
    text = models.TextField(_("レビュー"), blank=True)
    error = models.TextField(_("エラー"), blank=True)
    input_tokens = models.PositiveIntegerField(_("入力トークン"), default=0)
    output_tokens = models.PositiveIntegerField(_("出力トークン"), default=0)
    duration_ms = models.PositiveIntegerField(_("所要時間 (ms)"), default=0)
    created_at = models.DateTimeField(_("日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "AI レビュー")
        verbose_name_plural = pgettext_lazy("models", "AI レビュー")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return gettext("%(key)s の AI レビュー") % {"key": self.issue_key}

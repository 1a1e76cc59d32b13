"""Backlog webhook events, stored raw and deduplicated before anything acts on them."""

from __future__ import annotations

from django.db import models

from deliveries.models import Tenant

# Activity types automedia acts on (../shared/reference/backlog.md §1.3).
TYPE_CREATED = 1
TYPE_UPDATED = 2
TYPE_COMMENTED = 3
TYPE_DELETED = 4
TYPE_BULK_UPDATED = 14
HANDLED_TYPES = {TYPE_CREATED, TYPE_UPDATED, TYPE_COMMENTED, TYPE_DELETED, TYPE_BULK_UPDATED}


class BacklogEvent(models.Model):
    class Source(models.TextChoices):
        WEBHOOK = "webhook", "Webhook"
        CATCHUP = "catchup", "取りこぼし回収"

    class Outcome(models.TextChoices):
        PENDING = "pending", "処理待ち"
        DONE = "done", "処理済み"
        IGNORED = "ignored", "対象外"
        FAILED = "failed", "失敗"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="backlog_events")
    activity_id = models.BigIntegerField("アクティビティID")
    type = models.PositiveSmallIntegerField("種別")
    issue_key = models.CharField("課題キー", max_length=64, blank=True)
    payload = models.JSONField("受信内容")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.WEBHOOK)
    outcome = models.CharField("結果", max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    detail = models.TextField("詳細", blank=True)
    attempts = models.PositiveSmallIntegerField("処理回数", default=0)
    received_at = models.DateTimeField("受信日時", auto_now_add=True)
    processed_at = models.DateTimeField("処理日時", null=True, blank=True)

    class Meta:
        verbose_name = "Backlog イベント"
        verbose_name_plural = "Backlog イベント"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "activity_id"], name="uniq_backlog_activity")
        ]
        indexes = [models.Index(fields=["outcome", "received_at"])]

    def __str__(self) -> str:
        return f"{self.tenant.slug}#{self.activity_id} type={self.type} {self.issue_key}"


class CommandRun(models.Model):
    """A `/automedia …` comment command that ran: the audit trail and the once-only guard."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="command_runs")
    issue_key = models.CharField("課題キー", max_length=64)
    comment_id = models.BigIntegerField("コメントID")
    verb = models.CharField("コマンド", max_length=16)
    args = models.JSONField("引数", default=dict, blank=True)
    user = models.JSONField("実行者", default=dict, blank=True)
    result = models.TextField("結果", blank=True)
    created_at = models.DateTimeField("日時", auto_now_add=True)

    class Meta:
        verbose_name = "コメントコマンド"
        verbose_name_plural = "コメントコマンド"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "comment_id", "verb"], name="uniq_command_run")
        ]

    def __str__(self) -> str:
        return f"{self.issue_key} /automedia {self.verb}"


class AIReview(models.Model):
    """An advisory AI review of a preview, with its cost in tokens."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="ai_reviews")
    issue_key = models.CharField("課題キー", max_length=64)
    model = models.CharField("モデル", max_length=100)
    ok = models.BooleanField("成功", default=False)
    text = models.TextField("レビュー", blank=True)
    error = models.TextField("エラー", blank=True)
    input_tokens = models.PositiveIntegerField("入力トークン", default=0)
    output_tokens = models.PositiveIntegerField("出力トークン", default=0)
    duration_ms = models.PositiveIntegerField("所要時間 (ms)", default=0)
    created_at = models.DateTimeField("日時", auto_now_add=True)

    class Meta:
        verbose_name = "AI レビュー"
        verbose_name_plural = "AI レビュー"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.issue_key} {self.model} ({'ok' if self.ok else 'failed'})"

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

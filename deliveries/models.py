"""Content tasks mirrored from Backlog and what their delivery leaves: schedules, locks,
attempts, corrections, effect reports; the message templates and the scheduler's heartbeat."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.channels import DEFAULT_CHANNEL, channel_label
from core.due import Lease
from core.models import Tenant
from core.records import OutboundAttempt

# Backlog status names (seed 001), resolved to ids per project through the API.
STATUS_APPROVED = "automedia承認"
STATUS_DELIVERED = "automedia実行済み"
STATUS_ERROR = "automediaエラー"
STATUS_DEFAULT_REVERT = "処理中"

# Backlog custom field names (seed 000 / 001).
FIELD_PUBLISH_AT = "投稿日時"
FIELD_DELIVERED_AT = "自動配信実行日時"


def unapproved_q() -> models.Q:
    """Tasks that go out only once a manager approves them: a channel and a 投稿日時, no schedule,
    not delivered, refused or deleted. Those whose 投稿日時 has passed were missed."""
    waiting = models.Q(
        publish_at__isnull=False,
        schedule__isnull=True,
        delivered_at__isnull=True,
        deleted_at__isnull=True,
    )
    return (
        waiting
        & ~models.Q(channel="")
        & ~models.Q(status_name__in=(STATUS_APPROVED, STATUS_DELIVERED, STATUS_ERROR))
    )


class ContentTask(models.Model):
    """A Backlog issue as automedia last saw it, plus what automedia decided about it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tasks")
    issue_key = models.CharField(_("課題キー"), max_length=64)
    issue_id = models.BigIntegerField(_("課題ID"), null=True, blank=True)
    summary = models.CharField(_("件名"), max_length=500, blank=True)
    description = models.TextField(_("本文"), blank=True)
    status_id = models.IntegerField(_("状態ID"), null=True, blank=True)
    status_name = models.CharField(_("状態"), max_length=100, blank=True)
    channel = models.CharField(_("チャネル"), max_length=20, blank=True)
    publish_at = models.DateTimeField(_("投稿日時"), null=True, blank=True)
    template_ref = models.CharField(_("テンプレ"), max_length=200, blank=True)
    parsed = models.JSONField(_("解析結果"), default=dict, blank=True)
    parse_errors = models.JSONField(_("解析エラー"), default=list, blank=True)
    content_fingerprint = models.CharField(max_length=64, blank=True)
    delivered_at = models.DateTimeField(_("自動配信実行日時"), null=True, blank=True)
    approved_at = models.DateTimeField(_("承認受付日時"), null=True, blank=True)
    # `/automedia send template=… audience=…`: overrides of the body for that send.
    command_override = models.JSONField(_("コマンドによる上書き"), default=dict, blank=True)
    # What was approved: later edits are compared with these (seed 001 invalidate rules).
    approval_fingerprint = models.CharField(max_length=64, blank=True)
    approved_publish_at = models.DateTimeField(null=True, blank=True)
    approved_template_ref = models.CharField(max_length=200, blank=True)
    approval_seq = models.PositiveIntegerField(_("承認回数"), default=0)
    # The approval-time checks of the last approval (deliveries/approve/checks.py): what was
    # checked, and the LINE messages the send uses, which later quota forecasts count.
    approval_checks = models.JSONField(_("承認時の確認"), default=dict, blank=True)
    deleted_at = models.DateTimeField(_("削除日時"), null=True, blank=True)
    last_synced_at = models.DateTimeField(_("最終同期"), null=True, blank=True)
    # Optimistic concurrency: a decision is acted on only by the process that moved
    # the version on, so two events for one issue never act twice.
    version = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = pgettext_lazy("model", "コンテンツ課題")
        verbose_name_plural = pgettext_lazy("models", "コンテンツ課題")
        constraints = [models.UniqueConstraint(fields=["tenant", "issue_key"], name="uniq_task_issue")]
        # task_for_issue finds a task by Backlog's numeric id first (every decision, every
        # rescue of the scan): without it that lookup reads all of the tenant's tasks.
        indexes = [models.Index(fields=["tenant", "issue_id"], name="task_issue_id")]

    def __str__(self) -> str:
        return f"{self.issue_key} {self.summary}"

    def is_approved(self) -> bool:
        return self.status_name == STATUS_APPROVED

    @property
    def channel_label(self) -> str:
        return channel_label(self.channel)

    @property
    def backlog_url(self) -> str:
        """The issue's page in Backlog (https://<space>/view/<issue key>)."""
        return f"{self.tenant.backlog_base_url.rstrip('/')}/view/{self.issue_key}"


def lease_length() -> timedelta:
    """How long a delivery's claim holds unless its worker renews it (core/keeper.py)."""
    return timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)


class DeliverySchedule(models.Model):
    """One pending delivery per task; the row is the source of truth for due work."""

    # A delivery's claim (core/due.py): the row is held until lease_until by the token in claimed_by.
    LEASE = Lease(length=lease_length)

    class Reason(models.TextChoices):
        APPROVAL = "approval", _("承認")
        RESCHEDULE = "reschedule", _("投稿日時変更")
        COMMAND = "command", _("コメントコマンド")
        SCAN = "scan", _("取りこぼし救済")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="schedules")
    task = models.OneToOneField(ContentTask, on_delete=models.CASCADE, related_name="schedule")
    name = models.CharField(_("スケジュール名"), max_length=200, unique=True)
    due_at = models.DateTimeField(_("配信予定"), db_index=True)
    reason = models.CharField(_("理由"), max_length=16, choices=Reason.choices)

    class Stage(models.TextChoices):
        DELIVER = "deliver", _("配信待ち")
        WRITEBACK = "writeback", _("Backlog 書き戻し待ち")

    stage = models.CharField(_("段階"), max_length=16, choices=Stage.choices, default=Stage.DELIVER)
    lease_until = models.DateTimeField(_("リース期限"), null=True, blank=True)
    claimed_by = models.CharField(_("取得者"), max_length=200, blank=True)
    attempts = models.PositiveIntegerField(_("再試行回数"), default=0)
    last_error = models.TextField(_("最後のエラー"), blank=True)
    # Since when Backlog has failed this row (the re-read before sending, or the write-back);
    # None while Backlog answers. Backlog's own retry budget: `attempts` counts only the
    # channel's retries (core/retry.py).
    backlog_failing_since = models.DateTimeField(_("Backlog 障害の開始"), null=True, blank=True)
    # What to write back to Backlog once delivery has ended (kept until Backlog accepts it).
    outcome = models.JSONField(_("配信結果"), default=dict, blank=True)
    # Preparing ahead of the due second (deliveries/prepare/ahead.py): when the row next wants a
    # preparing pass (None: nothing more before it is due), and what the last one found
    # (the issue as Backlog answered it, and when).
    prepare_at = models.DateTimeField(_("事前準備の予定"), null=True, blank=True, db_index=True)
    prepared = models.JSONField(_("事前準備の結果"), default=dict, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "配信スケジュール")
        verbose_name_plural = pgettext_lazy("models", "配信スケジュール")
        ordering = ["due_at"]

    def __str__(self) -> str:
        # The name is the machinery's key; people know a schedule by its issue.
        return gettext("%(key)s の配信予約") % {"key": self.task.issue_key}

    @staticmethod
    def name_for(tenant: Tenant, issue_key: str) -> str:
        return f"automedia-deliver-{tenant.slug}-{issue_key}"

    @classmethod
    def free_q(cls, now: datetime) -> models.Q:
        """Rows no delivery holds: never claimed, or the claim's lease has run out."""
        return cls.LEASE.free(now)

    @classmethod
    def held_q(cls, now: datetime) -> models.Q:
        """Rows a delivery holds under a live lease."""
        return cls.LEASE.held(now)

    def is_held(self, now: datetime) -> bool:
        """A delivery holds the row under a live lease (in flight)."""
        return self.lease_until is not None and self.lease_until > now

    def delivery_owns(self, now: datetime) -> bool:
        """A delivery in flight, or one writing back, owns the row: a decision, a cancel or a
        new send leaves it alone (the delivery re-checks Backlog before every send)."""
        return self.is_held(now) or self.stage == self.Stage.WRITEBACK

    def is_due(self, now: datetime) -> bool:
        return self.due_at <= now and not self.is_held(now)


class DeliveryLock(models.Model):
    """One delivery per (tenant, issue) at a time (seed 000's conditional put, TTL 1 hour)."""

    TTL_SECONDS = 3600

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    issue_key = models.CharField(max_length=64)
    owner = models.CharField(max_length=64)
    taken_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        verbose_name = pgettext_lazy("model", "配信ロック")
        verbose_name_plural = pgettext_lazy("models", "配信ロック")
        constraints = [models.UniqueConstraint(fields=["tenant", "issue_key"], name="uniq_delivery_lock")]

    def __str__(self) -> str:
        return f"{self.issue_key} ({self.owner})"


class DeliveryAttempt(OutboundAttempt):
    """One outbound request of a delivery: the audit log and the admin's history."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(ContentTask, on_delete=models.CASCADE, related_name="attempts")
    approval_seq = models.PositiveIntegerField(_("承認回数"))
    chunk = models.PositiveIntegerField(_("チャンク"), default=0)
    channel = models.CharField(_("チャネル"), max_length=20)
    endpoint = models.CharField(_("送信先 API"), max_length=200)
    retry_key = models.CharField(_("再送キー"), max_length=64, blank=True)
    request_summary = models.JSONField(_("リクエスト概要"), default=dict)
    # LINE's answer to a push: [{id, quoteToken?}] per message (messaging-api.yml SentMessage);
    # a correction quotes the original with its quoteToken. A multicast answers `{}`.
    sent_messages = models.JSONField(_("送信メッセージ（ID と quoteToken）"), default=list, blank=True)
    # Set on the requests of a correction: they are not part of the delivery's own chunks.
    correction = models.ForeignKey(
        "DeliveryCorrection",
        verbose_name=_("訂正"),
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="attempts",
    )

    class Meta(OutboundAttempt.Meta):
        verbose_name = pgettext_lazy("model", "配信試行")
        verbose_name_plural = pgettext_lazy("models", "配信試行")
        indexes = [models.Index(fields=["task", "approval_seq", "chunk"])]

    def __str__(self) -> str:
        code = f" ({self.status_code})" if self.status_code else ""
        return f"{self.endpoint}: {self.get_outcome_display()}{code}"


class DeliveryCorrection(models.Model):
    """A correction sent after a LINE delivery (`/automedia correct`, the admin's 訂正を送る):
    one text to the recipients the delivery reached. The same text for the same delivery is
    the same correction, so running it again sends nothing twice; `retry_key` seeds its
    X-Line-Retry-Key per chunk (deliveries/channels/line/correction.py)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(ContentTask, on_delete=models.CASCADE, related_name="corrections")
    approval_seq = models.PositiveIntegerField(_("訂正する配信の承認回数"))
    text = models.TextField(_("訂正文"))
    text_hash = models.CharField(max_length=64)
    retry_key = models.UUIDField(_("再送キー（X-Line-Retry-Key の元）"), default=uuid.uuid4, editable=False)
    requested_by = models.CharField(_("依頼者"), max_length=200, blank=True)
    recipients = models.PositiveIntegerField(_("宛先数"), null=True, blank=True)
    sent_at = models.DateTimeField(_("送信日時"), null=True, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "訂正")
        verbose_name_plural = pgettext_lazy("models", "訂正")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "approval_seq", "text_hash"], name="uniq_correction_text")
        ]

    def __str__(self) -> str:
        return f"{self.task.issue_key} 訂正 {self.created_at:%Y-%m-%d %H:%M}" if self.created_at else "訂正"


class MessageTemplate(models.Model):
    """A message template revision; `name@rev` picks one, `name` alone the latest.

    Revisions are immutable: a changed file becomes a new row.
    """

    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="templates",
        help_text=_("空欄 = 全テナント共通"),
    )
    name = models.CharField(_("名前"), max_length=100)
    rev = models.CharField(_("リビジョン"), max_length=40)
    channel = models.CharField(_("チャネル"), max_length=20, default=DEFAULT_CHANNEL)
    messages = models.JSONField(_("メッセージ"))
    source = models.CharField(_("取り込み元"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "メッセージテンプレート")
        verbose_name_plural = pgettext_lazy("models", "メッセージテンプレート")
        ordering = ["name", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name", "rev"], name="uniq_template_rev"),
        ]

    def __str__(self) -> str:
        return f"{self.name}@{self.rev}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError(
                "テンプレートのリビジョンは変更できません（新しいリビジョンを取り込んでください）"
            )
        super().save(*args, **kwargs)


class SchedulerHeartbeat(models.Model):
    """The last loop time of each `run_scheduler` process, for health checks."""

    name = models.CharField(max_length=200, unique=True)
    last_beat = models.DateTimeField()

    class Meta:
        verbose_name = pgettext_lazy("model", "スケジューラ稼働状況")
        verbose_name_plural = pgettext_lazy("models", "スケジューラ稼働状況")

    def __str__(self) -> str:
        return self.name


class EffectReport(models.Model):
    """A due effect-measurement comment for one delivery.

    LINE: the per-unit statistics of `unit`. Instagram / TikTok / HubSpot: the statistics
    of the publication `post` (deliveries/channels/platform_effects.py).
    """

    class Label(models.TextChoices):
        H24 = "24h", _("24時間後")
        H72 = "72h", _("72時間後")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="effect_reports")
    task = models.ForeignKey(ContentTask, on_delete=models.CASCADE, related_name="effect_reports")
    channel = models.CharField(_("チャネル"), max_length=20, default=DEFAULT_CHANNEL)
    unit = models.CharField(_("集計単位（customAggregationUnit）"), max_length=30, blank=True)
    post = models.ForeignKey(
        "ChannelPost",
        verbose_name=_("チャネル投稿"),
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="effect_reports",
    )
    label = models.CharField(_("時点"), max_length=8, choices=Label.choices)
    # Also the claim lease: a worker moves it on before calling out, so a dead one's row comes back.
    due_at = models.DateTimeField(_("予定日時"), db_index=True)
    delivered_at = models.DateTimeField(_("配信日時"))
    # automedia's own count of destinations: the per-unit statistics API has no `delivered`.
    recipients = models.PositiveIntegerField(_("配信先数"), null=True, blank=True)
    done_at = models.DateTimeField(_("完了日時"), null=True, blank=True)
    result = models.JSONField(_("集計結果"), default=dict, blank=True)
    attempts = models.PositiveIntegerField(_("失敗回数"), default=0)
    last_error = models.TextField(_("最後のエラー"), blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "効果測定")
        verbose_name_plural = pgettext_lazy("models", "効果測定")
        ordering = ["due_at"]
        constraints = [
            # One report per point in time per delivery: planning twice is a no-op.
            models.UniqueConstraint(fields=["task", "label", "delivered_at"], name="uniq_effect_report"),
        ]

    def __str__(self) -> str:
        return gettext("%(unit)s 効果測定 (%(label)s)") % {
            "unit": self.unit or self.channel,
            "label": self.label,
        }

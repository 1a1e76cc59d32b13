"""Tenants, content tasks mirrored from Backlog, and their delivery schedules."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from backlog_bridge.parser import CHANNELS
from core.crypto import EncryptedTextField
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


# The grammar's one list of channels (backlog_bridge.parser.CHANNELS) as model choices; each
# channel has its package deliveries/channels/<value>/. Labels are the brands' own names.
Channel = models.TextChoices(
    "Channel", [(value.upper(), (value, label)) for value, label in CHANNELS.items()]
)
CHANNEL_LABELS = dict(Channel.choices)


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
    deleted_at = models.DateTimeField(_("削除日時"), null=True, blank=True)
    last_synced_at = models.DateTimeField(_("最終同期"), null=True, blank=True)
    # Optimistic concurrency: a decision is acted on only by the process that moved
    # the version on, so two events for one issue never act twice.
    version = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = pgettext_lazy("model", "コンテンツ課題")
        verbose_name_plural = pgettext_lazy("models", "コンテンツ課題")
        constraints = [models.UniqueConstraint(fields=["tenant", "issue_key"], name="uniq_task_issue")]

    def __str__(self) -> str:
        return f"{self.issue_key} {self.summary}"

    def is_approved(self) -> bool:
        return self.status_name == STATUS_APPROVED

    @property
    def channel_label(self) -> str:
        return CHANNEL_LABELS.get(self.channel, self.channel)


class DeliverySchedule(models.Model):
    """One pending delivery per task; the row is the source of truth for due work."""

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
    # What to write back to Backlog once delivery has ended (kept until Backlog accepts it).
    outcome = models.JSONField(_("配信結果"), default=dict, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "配信スケジュール")
        verbose_name_plural = pgettext_lazy("models", "配信スケジュール")
        ordering = ["due_at"]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def name_for(tenant: Tenant, issue_key: str) -> str:
        return f"automedia-deliver-{tenant.slug}-{issue_key}"

    def is_due(self, now: datetime) -> bool:
        return self.due_at <= now and (self.lease_until is None or self.lease_until <= now)


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
    approval_seq = models.PositiveIntegerField()
    chunk = models.PositiveIntegerField(_("チャンク"), default=0)
    channel = models.CharField(max_length=20)
    endpoint = models.CharField(max_length=200)
    retry_key = models.CharField(max_length=64, blank=True)
    request_summary = models.JSONField(_("リクエスト概要"), default=dict)

    class Meta(OutboundAttempt.Meta):
        verbose_name = pgettext_lazy("model", "配信試行")
        verbose_name_plural = pgettext_lazy("models", "配信試行")
        indexes = [models.Index(fields=["task", "approval_seq", "chunk"])]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.outcome} {self.status_code or ''}"


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
    channel = models.CharField(_("チャネル"), max_length=20, default="line")
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
    of the publication `post` (deliveries/channel_effects.py).
    """

    class Label(models.TextChoices):
        H24 = "24h", _("24時間後")
        H72 = "72h", _("72時間後")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="effect_reports")
    task = models.ForeignKey(ContentTask, on_delete=models.CASCADE, related_name="effect_reports")
    channel = models.CharField(_("チャネル"), max_length=20, default="line")
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


# -- Instagram / TikTok / HubSpot (issue 7) ---------------------------------------------


class ChannelAccount(models.Model):
    """A tenant's account on one publishing platform: credentials and token metadata.

    Tokens are encrypted at rest and write-only in forms. TikTok refresh tokens rotate
    (https://developers.tiktok.com/docs/en/oauth-refresh-a-user-access-token): every refresh
    stores the new one, and only one refresh per account runs at a time
    (`refresh_lease_until` is its claim).
    """

    # The channels published through an account of their own (LINE uses the tenant's token).
    class Channel(models.TextChoices):
        INSTAGRAM = Channel.INSTAGRAM.value, Channel.INSTAGRAM.label
        TIKTOK = Channel.TIKTOK.value, Channel.TIKTOK.label
        HUBSPOT = Channel.HUBSPOT.value, Channel.HUBSPOT.label

    class HubSpotMode(models.TextChoices):
        NOTE = "note", _("コンタクトへの CRM ノート")
        EMAIL = "email", _("マーケティングメール（single-send）")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="channel_accounts")
    channel = models.CharField(_("チャネル"), max_length=20, choices=Channel.choices)
    access_token = EncryptedTextField(
        _("アクセストークン"),
        help_text=_("Instagram の長期トークン / TikTok のアクセストークン / HubSpot のトークン"),
    )
    refresh_token = EncryptedTextField(_("リフレッシュトークン（TikTok）"), blank=True, default="")
    expires_at = models.DateTimeField(_("トークン有効期限"), null=True, blank=True)
    refresh_expires_at = models.DateTimeField(_("リフレッシュトークン有効期限"), null=True, blank=True)
    refreshed_at = models.DateTimeField(_("最終更新"), null=True, blank=True)
    refresh_lease_until = models.DateTimeField(_("更新処理中（期限）"), null=True, blank=True)
    # Set when the platform answers an auth error or a refresh fails; cleared when a token is saved.
    token_invalid_at = models.DateTimeField(_("トークン無効検知"), null=True, blank=True)
    ig_user_id = models.CharField(_("Instagram ユーザーID"), max_length=64, blank=True)
    open_id = models.CharField("TikTok open_id", max_length=128, blank=True)
    hubspot_mode = models.CharField(
        _("HubSpot のモード"), max_length=8, choices=HubSpotMode.choices, default=HubSpotMode.NOTE
    )
    hubspot_tag_property = models.CharField(
        _("HubSpot のタグ用プロパティ"),
        max_length=100,
        default="automedia_tags",
        help_text=_("対象タグ（tag:…）と照合するコンタクトのプロパティ（複数選択は ; 区切り）"),
    )
    hubspot_email_from = models.CharField(_("送信元（HubSpot メール）"), max_length=254, blank=True)
    hubspot_reply_to = models.CharField(_("返信先（HubSpot メール）"), max_length=254, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "チャネルアカウント")
        verbose_name_plural = pgettext_lazy("models", "チャネルアカウント")
        ordering = ["tenant", "channel"]
        constraints = [models.UniqueConstraint(fields=["tenant", "channel"], name="uniq_channel_account")]

    def __str__(self) -> str:
        return f"{self.tenant.slug} / {self.get_channel_display()}"

    def clean(self) -> None:
        required = {self.Channel.INSTAGRAM: "ig_user_id", self.Channel.TIKTOK: "open_id"}.get(self.channel)
        if required and not getattr(self, required):
            raise ValidationError(
                {required: gettext("%(channel)s では必須です。") % {"channel": self.get_channel_display()}}
            )


class ChannelPost(models.Model):
    """One publication of one approval on Instagram / TikTok / HubSpot.

    Every platform id is saved here the moment it exists, before the next call, so a
    retry continues from it instead of publishing again (issue 7; neither Instagram nor TikTok
    has an idempotency key, see deliveries/channels/platform.py).
    """

    class Phase(models.TextChoices):
        NEW = "new", _("未投稿")
        PROCESSING = "processing", _("プラットフォームで処理中")
        PUBLISHING = "publishing", _("公開を依頼済み（結果確認待ち）")
        SENDING = "sending", _("送信中")
        DONE = "done", _("完了")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(ContentTask, on_delete=models.CASCADE, related_name="channel_posts")
    approval_seq = models.PositiveIntegerField(_("承認回数"))
    channel = models.CharField(_("チャネル"), max_length=20)
    phase = models.CharField(_("段階"), max_length=16, choices=Phase.choices, default=Phase.NEW)
    container_id = models.CharField(_("Instagram コンテナID"), max_length=64, blank=True)
    children = models.JSONField(_("カルーセルの子コンテナID"), default=list, blank=True)
    publish_id = models.CharField("TikTok publish_id", max_length=128, blank=True)
    note_id = models.CharField(_("HubSpot ノートID"), max_length=64, blank=True)
    send_key = models.CharField(_("送信キー（sendId / ノート照合用）"), max_length=64, blank=True)
    post_id = models.CharField(_("投稿ID"), max_length=128, blank=True)
    permalink = models.URLField(_("パーマリンク"), max_length=500, blank=True)
    platform_status = models.CharField(_("プラットフォームの状態"), max_length=64, blank=True)
    checks = models.PositiveIntegerField(_("状態確認回数"), default=0)
    processing_since = models.DateTimeField(_("処理開始"), null=True, blank=True)
    waiting_until = models.DateTimeField(_("投稿枠の待ち（予定）"), null=True, blank=True)
    published_at = models.DateTimeField(_("公開日時"), null=True, blank=True)
    details = models.JSONField(_("詳細"), default=dict, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "チャネル投稿")
        verbose_name_plural = pgettext_lazy("models", "チャネル投稿")
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["task", "approval_seq"], name="uniq_channel_post")]

    def __str__(self) -> str:
        return f"{self.task.issue_key} #{self.approval_seq} {self.channel} ({self.phase})"

    def is_committed(self) -> bool:
        """A publish call may have reached the platform: only its outcome may be read now."""
        committed = (self.Phase.PUBLISHING, self.Phase.SENDING, self.Phase.DONE)
        return self.phase in committed or bool(self.publish_id or self.note_id or self.post_id)

"""The accounts of the publishing platforms (Instagram / TikTok / HubSpot) and each
publication on them. Models of the deliveries app, registered through deliveries/models.py."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.channels import CHANNELS
from core.crypto import EncryptedTextField
from core.models import Tenant


class ChannelAccount(models.Model):
    """A tenant's account on one publishing platform: credentials and token metadata.

    Tokens are encrypted at rest and write-only in forms. TikTok refresh tokens rotate
    (https://developers.tiktok.com/docs/en/oauth-refresh-a-user-access-token): every refresh
    stores the new one, and only one refresh per account runs at a time
    (`refresh_lease_until` is its claim).
    """

    # The channels published through an account of their own (LINE uses the tenant's token).
    Channel = models.TextChoices(
        "Channel", [(kind.upper(), (kind, c.label)) for kind, c in CHANNELS.items() if c.account]
    )

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
    """One publication of one approval on Instagram / TikTok / HubSpot, or one LINE
    narrowcast (deliveries/channels/line/narrowcast.py: `post_id` is its request id).

    Every platform id is saved here the moment it exists, before the next call, so a
    retry continues from it instead of publishing again (neither Instagram nor TikTok
    has an idempotency key, see deliveries/channels/platform_transport.py).
    """

    class Phase(models.TextChoices):
        NEW = "new", _("未投稿")
        PROCESSING = "processing", _("プラットフォームで処理中")
        PUBLISHING = "publishing", _("公開を依頼済み（結果確認待ち）")
        SENDING = "sending", _("送信中")
        DONE = "done", _("完了")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("deliveries.ContentTask", on_delete=models.CASCADE, related_name="channel_posts")
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
        return f"{self.task.issue_key} #{self.approval_seq} {self.channel} ({self.get_phase_display()})"

    @staticmethod
    def users_dropped(details: dict) -> dict:
        """A LINE narrowcast's details without its user ids (kept as their number): once
        its audience is deleted the list has served, and it names people."""
        users = details.get("users") or []
        return {**details, "users": [], "audience_size": len(users), "users_dropped": True}

    @staticmethod
    def audience_size(details: dict) -> int:
        return details.get("audience_size", len(details.get("users") or []))

    def is_committed(self) -> bool:
        """A publish call may have reached the platform: only its outcome may be read now."""
        committed = (self.Phase.PUBLISHING, self.Phase.SENDING, self.Phase.DONE)
        return self.phase in committed or bool(self.publish_id or self.note_id or self.post_id)

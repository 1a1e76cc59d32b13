"""What comes in to automedia from LINE and other systems: the followers (contacts) the
LINE webhook records, its stored events, the survey-answer rules applied to their text
(and the answers they were applied to), and the API tokens of `POST /api/linepush/items/`. Django loads these models through
linepush/models.py (they keep the app label `linepush`)."""

from __future__ import annotations

import hashlib
import logging
import secrets
from functools import lru_cache

import re2
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.models import Tenant
from core.records import StoredWebhookEvent
from linepush.settings_models import Trigger, validate_triggers

API_TOKEN_PREFIX = "lp_"
logger = logging.getLogger(__name__)


class LineContact(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_contacts")
    user_id = models.CharField(_("LINE ユーザーID"), max_length=64)
    display_name = models.CharField(_("表示名"), max_length=200, blank=True)
    tags = models.JSONField(_("タグ"), default=list, blank=True)
    blocked = models.BooleanField(_("ブロック中"), default=False)
    # When the user blocked the account: the profile goes RETENTION_UNFOLLOWED_DAYS after it.
    blocked_at = models.DateTimeField(_("ブロック日時"), null=True, blank=True)
    # A survey answer asked to be included in the next delivery (LineSurveyRule.next_delivery).
    wants_next_delivery = models.BooleanField(_("次回配信を希望"), default=False)
    followed_at = models.DateTimeField(_("友だち追加日時"), null=True, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 連絡先")
        verbose_name_plural = pgettext_lazy("models", "LINE 連絡先")
        constraints = [models.UniqueConstraint(fields=["tenant", "user_id"], name="uniq_line_contact")]

    def __str__(self) -> str:
        return self.display_name or self.user_id

    def save(self, *args, **kwargs) -> None:
        # A block set by hand in the admin starts the grace period too.
        if not self.blocked:
            self.blocked_at = None
        elif self.blocked_at is None:
            self.blocked_at = timezone.now()
        super().save(*args, **kwargs)


class LineErasure(models.Model):
    """A LINE user's data erased on a request (linepush/erasure.py): who erased and when.
    Whose data it was is not kept, since the user's id is what was erased."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_erasures")
    erased_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("実行者"),
    )
    # The account's name at the time, kept if the account is deleted later.
    erased_by_name = models.CharField(_("実行者名"), max_length=150)
    erased_at = models.DateTimeField(_("消去日時"), auto_now_add=True)
    events = models.PositiveIntegerField(_("ID を消した受信イベント"), default=0)
    attempts = models.PositiveIntegerField(_("ID を消した配信試行"), default=0)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE ユーザーデータの消去")
        verbose_name_plural = pgettext_lazy("models", "LINE ユーザーデータの消去")
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"{self.erased_by_name} {self.erased_at:%Y-%m-%d %H:%M}" if self.erased_at else "消去"


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


class LineWebhookEvent(StoredWebhookEvent):
    """A LINE webhook event, stored raw and deduplicated on webhookEventId before it is acted on."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_webhook_events")
    webhook_event_id = models.CharField("webhookEventId", max_length=64)
    type = models.CharField(_("種別"), max_length=32)

    class Meta(StoredWebhookEvent.Meta):
        verbose_name = pgettext_lazy("model", "LINE Webhook イベント")
        verbose_name_plural = pgettext_lazy("models", "LINE Webhook イベント")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "webhook_event_id"], name="uniq_line_webhook_event")
        ]
        indexes = [models.Index(fields=["outcome", "received_at"], name="line_event_outcome_idx")]

    def __str__(self) -> str:
        return gettext("LINE のイベント %(id)s") % {"id": self.webhook_event_id}


class LineSurveyRule(models.Model):
    """A text message that matches → tags added / removed, optionally "wants the next delivery"."""

    class Match(models.TextChoices):
        KEYWORD = "keyword", _("キーワード（含む）")
        EXACT = "exact", _("完全一致")
        REGEX = "regex", _("正規表現")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_survey_rules")
    name = models.CharField(_("名前"), max_length=100)
    match = models.CharField(_("一致方法"), max_length=8, choices=Match.choices, default=Match.KEYWORD)
    pattern = models.CharField(_("パターン"), max_length=500)
    add_tags = models.JSONField(_("追加するタグ"), default=list, blank=True)
    remove_tags = models.JSONField(_("外すタグ"), default=list, blank=True)
    next_delivery = models.BooleanField(_("次回配信の対象にする"), default=False)
    priority = models.PositiveSmallIntegerField(_("優先順"), default=100)
    is_active = models.BooleanField(_("有効"), default=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE アンケート回答ルール")
        verbose_name_plural = pgettext_lazy("models", "LINE アンケート回答ルール")
        ordering = ["priority", "id"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.match == self.Match.REGEX:
            try:
                survey_regex(self.pattern)
            except re2.error as exc:
                raise ValidationError(
                    {
                        "pattern": gettext(
                            "正規表現として使えません（RE2 の構文で書いてください。後方参照 \\1 や"
                            "先読み・後読み (?=…) (?!…) (?<=…) (?<!…) は使えません）: %(error)s"
                        )
                        % {"error": re2_reason(exc)}
                    }
                ) from exc
        for name in ("add_tags", "remove_tags"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
                raise ValidationError({name: _("タグは文字列のリストで指定してください。")})

    def matches(self, text: str) -> bool:
        text = text.strip()
        if self.match == self.Match.EXACT:
            return text == self.pattern.strip()
        if self.match == self.Match.REGEX:
            try:
                return survey_regex(self.pattern).search(text) is not None
            except re2.error as exc:
                # Stored before patterns were checked with RE2 (or written to the table directly):
                # this rule never matches, the other rules still run.
                logger.warning(
                    "survey rule %s (tenant %s) skipped: its pattern is not RE2: %s",
                    self.pk,
                    self.tenant_id,
                    re2_reason(exc),
                )
                return False
        return self.pattern in text


class LineAnswer(models.Model):
    """The version of a LINE text message the survey rules were last applied to, and what
    they changed: an edit (`messageEdited`) replaces the answer only when it is later by
    LINE's timestamp, since edits, and the message itself, may arrive in any order."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_answers")
    message_id = models.CharField(_("LINE メッセージID"), max_length=64)
    user_id = models.CharField(_("LINE ユーザーID"), max_length=64)
    timestamp = models.BigIntegerField(_("版の時刻 (ms)"))
    text = models.TextField(_("本文"), blank=True)
    added_tags = models.JSONField(_("この版が追加したタグ"), default=list, blank=True)
    set_next_delivery = models.BooleanField(_("この版が次回配信希望にした"), default=False)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE アンケート回答")
        verbose_name_plural = pgettext_lazy("models", "LINE アンケート回答")
        constraints = [models.UniqueConstraint(fields=["tenant", "message_id"], name="uniq_line_answer")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.message_id}"


# Managers write these patterns and they run on any text a LINE user sends, in the
# shared workers. RE2 matches in time linear in the text whatever the pattern (no
# backtracking: https://github.com/google/re2/wiki/WhyRE2), at the price of backreferences
# and lookarounds, which it refuses to compile (https://github.com/google/re2/wiki/Syntax).
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would print every refused pattern to stderr itself


@lru_cache(maxsize=512)
def survey_regex(pattern: str) -> re2._Regexp:
    """The compiled RE2 program of a survey pattern; raises re2.error (not cached) if RE2 refuses it."""
    return re2.compile(pattern, _RE2_OPTIONS)


def re2_reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)

"""What LINE tells automedia about the account's users: the followers (contacts) its webhook
records and their tags, its stored events, the survey-answer rules applied to the users'
text (and the answers they were applied to), and the record of a user's data erased.
Django loads these models through line/models.py."""

from __future__ import annotations

import logging
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
        db_table = "linepush_linecontact"  # made by linepush's migrations, kept when the model moved

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
    """A LINE user's data erased on a request (line/erasure.py): who erased and when.
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
        db_table = "linepush_lineerasure"

    def __str__(self) -> str:
        return f"{self.erased_by_name} {self.erased_at:%Y-%m-%d %H:%M}" if self.erased_at else "消去"


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
        db_table = "linepush_linewebhookevent"

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
        db_table = "linepush_linesurveyrule"

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
        db_table = "linepush_lineanswer"

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

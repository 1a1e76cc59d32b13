"""LINE contacts and groups, the group push queue (seed 003 `line_push_queue`) and its policies.

Seed 003: operational messages (task approved, reminders, escalations, a morning
digest, signals from other systems) are posted into LINE groups where talent,
managers and clients meet. A wrong post is a matter of trust, so a group must opt in
(`allow_outbound_push`, `push_opt_in_triggers`), risky triggers wait for a manager,
every group and tenant is rate limited, and a dedupe key makes every post happen once.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import uuid
from datetime import datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import re2
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.i18n import japanese
from core.models import Tenant
from core.records import OutboundAttempt, StoredWebhookEvent

API_TOKEN_PREFIX = "lp_"
logger = logging.getLogger(__name__)
RETRY_KEY_NAMESPACE = uuid.UUID("0b7f4c3e-8a51-4d6e-b2f9-51c3a8e0d7a4")


class Trigger(models.TextChoices):
    TASK_APPROVED = "task_approved", _("タスク承認")
    REMINDER = "reminder", _("リマインダー")
    ESCALATION = "escalation", _("エスカレーション")
    SIGNAL_APPROVED = "signal_approved", _("外部シグナル承認")
    MORNING_DIGEST = "morning_digest", _("朝のダイジェスト")


# Seed 003 §5: triggers that post without a person reading them first are the routine
# ones; an escalation or an outside system's signal waits for a manager by default.
APPROVAL_REQUIRED_BY_DEFAULT = frozenset({Trigger.ESCALATION, Trigger.SIGNAL_APPROVED})


def validate_triggers(value: object) -> None:
    if not isinstance(value, list) or not all(v in Trigger.values for v in value):
        raise ValidationError(
            gettext("トリガーは %(choices)s から選んでリストで指定してください。")
            % {"choices": ", ".join(Trigger.values)}
        )


def validate_timezone(value: str) -> None:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationError(
            gettext("タイムゾーン「%(value)s」は不明です（例: Asia/Tokyo）。") % {"value": value}
        ) from exc


def validate_messages(value: object) -> None:
    from deliveries.channels.line.templates import validate_line_messages

    if value in ([], None):
        return
    problems = validate_line_messages(value)
    if problems:
        raise ValidationError(problems)


class LineContact(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_contacts")
    user_id = models.CharField(_("LINE ユーザーID"), max_length=64)
    display_name = models.CharField(_("表示名"), max_length=200, blank=True)
    tags = models.JSONField(_("タグ"), default=list, blank=True)
    blocked = models.BooleanField(_("ブロック中"), default=False)
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


class LinePlan(models.Model):
    """A LINE Official Account plan (Japan, since 2023-06).

    Plans: https://developers.line.biz/en/docs/messaging-api/pricing/ and
    https://www.lycbiz.com/jp/service/line-official-account/plan/.

    Kept as data: prices and allowances change, and a plan change is an admin edit.
    """

    code = models.SlugField(_("コード"), unique=True)
    name = models.CharField(_("プラン名"), max_length=100)
    monthly_messages = models.PositiveIntegerField(_("月間メッセージ数"))
    additional_messages = models.BooleanField(_("追加メッセージ可"), default=False)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE プラン")
        verbose_name_plural = pgettext_lazy("models", "LINE プラン")
        ordering = ["monthly_messages"]

    def __str__(self) -> str:
        return gettext("%(name)s（月 %(count)s 通）") % {
            "name": self.name,
            "count": f"{self.monthly_messages:,}",
        }


class LinePushSettings(models.Model):
    """A tenant's LINE group-push settings: plan, limits, time zone, registration reply."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="line_push_settings")
    plan = models.ForeignKey(
        LinePlan,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        verbose_name=_("プラン"),
        help_text=_("空欄 = LINE の上限（毎日の確認結果）だけで判定"),
    )
    tenant_rate_limit = models.PositiveIntegerField(
        _("テナント全体の上限（件）"), null=True, blank=True, help_text=_("空欄 = 制限なし")
    )
    tenant_rate_window_seconds = models.PositiveIntegerField(_("テナント全体の上限の期間（秒）"), default=300)
    timezone = models.CharField(
        _("タイムゾーン"), max_length=64, default="Asia/Tokyo", validators=[validate_timezone]
    )
    digest_hour = models.PositiveSmallIntegerField(_("朝のダイジェストの時刻（時）"), default=8)
    registration_messages = models.JSONField(
        _("友だち追加時の返信（登録クーポン）"),
        default=list,
        blank=True,
        validators=[validate_messages],
        help_text=_("LINE メッセージオブジェクトの配列（1〜5 件）。空 = 返信しない"),
    )

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 投稿設定")
        verbose_name_plural = pgettext_lazy("models", "LINE 投稿設定")

    def __str__(self) -> str:
        return gettext("%(tenant)s の LINE 投稿設定") % {"tenant": self.tenant.slug}

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class LineMonthlyUsage(models.Model):
    """Messages counted against the tenant's monthly allowance (per member of a group).

    Counting: https://developers.line.biz/en/docs/messaging-api/pricing/.

    `messages` is automedia's running count; the daily check replaces it with LINE's
    own `totalUsage` (which also counts deliveries and manual posts) and stores LINE's limit.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_usage")
    month = models.CharField(_("月"), max_length=7, help_text=_("YYYY-MM（テナントのタイムゾーン）"))
    messages = models.PositiveIntegerField(_("使用数"), default=0)
    line_limit = models.PositiveIntegerField(_("LINE の上限"), null=True, blank=True)
    line_total_usage = models.PositiveIntegerField(_("LINE の使用数"), null=True, blank=True)
    checked_at = models.DateTimeField(_("LINE で確認した日時"), null=True, blank=True)
    warned_at = models.DateTimeField(_("80% 警告日時"), null=True, blank=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 月間使用数")
        verbose_name_plural = pgettext_lazy("models", "LINE 月間使用数")
        constraints = [models.UniqueConstraint(fields=["tenant", "month"], name="uniq_line_usage_month")]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.month}: {self.messages}"


class LineTriggerPolicy(models.Model):
    """Per tenant and trigger: must a manager approve before a post goes out?"""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_trigger_policies")
    trigger_type = models.CharField(_("トリガー"), max_length=32, choices=Trigger.choices)
    requires_approval = models.BooleanField(_("承認が必要"), default=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE トリガー承認設定")
        verbose_name_plural = pgettext_lazy("models", "LINE トリガー承認設定")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "trigger_type"], name="uniq_line_trigger_policy")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.trigger_type}"

    @staticmethod
    def approval_required(tenant: Tenant, trigger_type: str) -> bool:
        row = LineTriggerPolicy.objects.filter(tenant=tenant, trigger_type=trigger_type).first()
        if row is not None:
            return row.requires_approval
        return trigger_type in APPROVAL_REQUIRED_BY_DEFAULT


class LineSource(models.Model):
    """A LINE group or room the bot is in (kept current by the LINE webhook)."""

    class Kind(models.TextChoices):
        GROUP = "group", _("グループ")
        ROOM = "room", _("複数人トーク")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_sources")
    group_id = models.CharField(_("グループID"), max_length=64)
    kind = models.CharField(_("種類"), max_length=8, choices=Kind.choices, default=Kind.GROUP)
    name = models.CharField(_("名前"), max_length=200, blank=True)
    allow_outbound_push = models.BooleanField(_("自動投稿を許可"), default=False)
    push_opt_in_triggers = models.JSONField(
        _("許可するトリガー"), default=list, blank=True, validators=[validate_triggers]
    )
    # LINE's count excludes the bot (line/line-openapi `GroupMemberCountResponse`); a push to a
    # group costs one message per member (https://developers.line.biz/en/docs/messaging-api/pricing/).
    member_count = models.PositiveIntegerField(_("メンバー数"), null=True, blank=True)
    rate_limit_count = models.PositiveIntegerField(_("グループの上限（件）"), default=3)
    rate_limit_window_seconds = models.PositiveIntegerField(_("グループの上限の期間（秒）"), default=300)
    joined_at = models.DateTimeField(_("参加日時"), null=True, blank=True)
    left_at = models.DateTimeField(_("退出日時"), null=True, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE グループ")
        verbose_name_plural = pgettext_lazy("models", "LINE グループ")
        constraints = [models.UniqueConstraint(fields=["tenant", "group_id"], name="uniq_line_source")]

    def __str__(self) -> str:
        return self.name or self.group_id

    def refusal(self, trigger_type: str) -> str:
        """Why this group takes no post of this trigger; empty when it does (seed 003 §6.3)."""
        if self.left_at is not None:
            return "ボットはこのグループから退出しています"
        if not self.allow_outbound_push:
            return "このグループへの自動投稿は許可されていません（allow_outbound_push が無効）"
        if trigger_type not in (self.push_opt_in_triggers or []):
            label = japanese(Trigger(trigger_type).label) if trigger_type in Trigger.values else trigger_type
            return f"このグループは「{label}」（{trigger_type}）の自動投稿を許可していません"
        return ""

    @property
    def cost(self) -> int:
        """Messages one push costs; an unknown member count is taken as 1."""
        return max(1, self.member_count or 1)


class LinePushItem(models.Model):
    """One post into one group: seed 003's `line_push_queue` row."""

    class Status(models.TextChoices):
        WAITING_APPROVAL = "waiting_approval", _("承認待ち")
        PENDING = "pending", _("送信待ち")
        HELD = "held", _("保留（月間上限）")
        SENT = "sent", _("送信済み")
        FAILED = "failed", _("失敗")
        SKIPPED = "skipped", _("スキップ")

    OPEN = (Status.WAITING_APPROVAL, Status.PENDING, Status.HELD)
    MAX_ATTEMPTS = 3

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_push_items")
    ext_group_id = models.CharField(_("投稿先グループID"), max_length=64)
    trigger_type = models.CharField(_("トリガー"), max_length=32, choices=Trigger.choices)
    payload = models.JSONField(_("メッセージ"), help_text=_("LINE メッセージオブジェクトの配列（1〜5 件）"))
    source_table = models.CharField(_("発生元テーブル"), max_length=64, blank=True)
    source_id = models.CharField(_("発生元ID"), max_length=128, blank=True)
    # Unique per tenant (Meta): a key is a tenant's own name for a post, never a claim on
    # another tenant's (issue 13 §1).
    dedupe_key = models.CharField(_("重複排除キー"), max_length=255)
    # The `X-Line-Retry-Key` of every attempt, fixed when the item is created: a later change
    # of how keys are derived never changes the key of a post LINE may already have accepted.
    retry_key = models.CharField(_("再送キー"), max_length=36, blank=True, editable=False)
    scheduled_at = models.DateTimeField(_("送信予定"))
    status = models.CharField(_("状態"), max_length=20, choices=Status.choices, default=Status.PENDING)
    attempt_count = models.PositiveSmallIntegerField(_("試行回数"), default=0)
    last_error = models.TextField(_("最後のエラー"), blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("承認者"),
    )
    approved_at = models.DateTimeField(_("承認日時"), null=True, blank=True)
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("却下者"),
    )
    sent_at = models.DateTimeField(_("送信日時"), null=True, blank=True)
    request_id = models.CharField(_("LINE リクエストID"), max_length=100, blank=True)
    # The claim (as DeliverySchedule): a dead worker's row is claimed again after the lease.
    lease_until = models.DateTimeField(_("リース期限"), null=True, blank=True)
    claimed_by = models.CharField(_("取得者"), max_length=64, blank=True)
    # When the current attempt took its place in the rate-limit window.
    reserved_at = models.DateTimeField(_("送信枠の確保日時"), null=True, blank=True)
    reserved_cost = models.PositiveIntegerField(_("確保したメッセージ数"), default=0)
    first_attempt_at = models.DateTimeField(_("初回送信日時"), null=True, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 投稿")
        verbose_name_plural = pgettext_lazy("models", "LINE 投稿")
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "dedupe_key"], name="uniq_line_push_dedupe_key")
        ]
        indexes = [
            models.Index(fields=["status", "scheduled_at"], name="line_push_status_sched_idx"),
            models.Index(fields=["tenant", "ext_group_id", "reserved_at"], name="line_push_window_idx"),
        ]

    def __str__(self) -> str:
        return self.dedupe_key

    def save(self, *args, **kwargs) -> None:
        if not self.retry_key:
            self.retry_key = self.derived_retry_key()
        super().save(*args, **kwargs)

    def derived_retry_key(self) -> str:
        """A UUID from tenant and dedupe key: two tenants' equal keys never share one.

        LINE accepts a request with a given retry key once in 24 h
        (https://developers.line.biz/en/docs/messaging-api/retrying-api-request/), and tenants
        may post through the same channel.
        """
        return str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{self.tenant_id}:{self.dedupe_key}"))

    def may_send(self, source: LineSource | None) -> str:
        """Why this item may not be posted to `source`; empty when it may."""
        if self.status != self.Status.PENDING:
            return f"状態が「{japanese(self.Status(self.status).label)}」のため送信できません"
        if source is None:
            return f"グループ {self.ext_group_id} はボットの参加グループとして登録されていません"
        return source.refusal(self.trigger_type)

    def retry_expired(self, now: datetime) -> bool:
        """LINE keeps a retry key 24 h: later, a resend could post twice.

        https://developers.line.biz/en/docs/messaging-api/retrying-api-request/
        """
        return self.first_attempt_at is not None and now - self.first_attempt_at > timedelta(hours=23)


class LinePushAttempt(OutboundAttempt):
    """One push request of an item: the audit log."""

    item = models.ForeignKey(LinePushItem, on_delete=models.CASCADE, related_name="attempts")
    retry_key = models.CharField(_("再送キー"), max_length=64)

    class Meta(OutboundAttempt.Meta):
        verbose_name = pgettext_lazy("model", "LINE 投稿の試行")
        verbose_name_plural = pgettext_lazy("models", "LINE 投稿の試行")

    def __str__(self) -> str:
        return f"{self.item_id} {self.outcome} {self.status_code or ''}"


class LinePushProblem(models.Model):
    """A post a producer could not queue, kept with its source until a later run queues it.

    Producers go on with the other posts (issue 13 §1); this row is how a manager sees
    that one of them was not queued, and why.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_push_problems")
    trigger_type = models.CharField(_("トリガー"), max_length=32, choices=Trigger.choices)
    source_table = models.CharField(_("発生元テーブル"), max_length=64)
    source_id = models.CharField(_("発生元ID"), max_length=128)
    error = models.TextField(_("エラー"))
    occurrences = models.PositiveIntegerField(_("発生回数"), default=1)
    first_seen_at = models.DateTimeField(_("初回発生日時"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("最終発生日時"))

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 投稿の作成エラー")
        verbose_name_plural = pgettext_lazy("models", "LINE 投稿の作成エラー")
        ordering = ["-last_seen_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "trigger_type", "source_table", "source_id"], name="uniq_line_push_problem"
            )
        ]

    def __str__(self) -> str:
        return f"{self.trigger_type} {self.source_table}:{self.source_id}"


def api_token_hash(token: str) -> str:
    # The token is 256 random bits: a plain SHA-256 is enough (no password stretching needed).
    return hashlib.sha256(token.encode()).hexdigest()


class LineApiToken(models.Model):
    """A tenant's token for `POST /api/linepush/items/`; only its hash is stored."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_api_tokens")
    name = models.CharField(_("名前"), max_length=100)
    prefix = models.CharField(_("先頭"), max_length=16, help_text=_("識別用（トークンの先頭）"))
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
    def issue(cls, *, tenant: Tenant, name: str) -> tuple[LineApiToken, str]:
        """A new token; the plain text is returned once and never stored."""
        plain = API_TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            tenant=tenant, name=name, prefix=plain[:10], token_hash=api_token_hash(plain)
        )
        return row, plain


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
        return f"{self.tenant.slug} {self.type} {self.webhook_event_id}"


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

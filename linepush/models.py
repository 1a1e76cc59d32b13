"""The group push queue (seed 003 `line_push_queue`) and its policies; the groups it posts
into are LINE's (line/models.py `LineSource`).

Seed 003: operational messages (task approved, reminders, escalations, a morning
digest, signals from other systems) are posted into LINE groups where talent,
managers and clients meet. A wrong post is a matter of trust, so a group must opt in
(`allow_outbound_push`, `push_opt_in_triggers`), risky triggers wait for a manager,
every group and tenant is rate limited, and a dedupe key makes every post happen once.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.due import Lease
from core.i18n import japanese
from core.models import Tenant
from core.records import OutboundAttempt
from core.retry import max_attempts
from core.timeutil import JST
from line.models import LineSource, Trigger

# The validators are named here too: migration 0002 refers to them as linepush.models.*.
from line.settings_models import validate_messages, validate_timezone, validate_triggers  # noqa: F401

# Django registers an app's models from its models.py: these live in modules of their own.
from linepush.inbound_models import LineApiToken
from linepush.settings_models import LineTriggerPolicy  # noqa: F401

RETRY_KEY_NAMESPACE = uuid.UUID("0b7f4c3e-8a51-4d6e-b2f9-51c3a8e0d7a4")


# Who queues posts: automedia's producers by name, and the API's tokens.
API_ORIGIN = "api"
ORIGINS = {
    "task_approved": _("タスク承認"),
    "reminder": _("リマインダー"),
    "escalation": _("エスカレーション"),
    "failure_notice": _("配信失敗の通知"),
    "morning_digest": _("朝のダイジェスト"),
    API_ORIGIN: "API",
}


def token_space(token: LineApiToken) -> str:
    """An API token's own dedupe space."""
    return f"token:{token.pk}"


_PENDING = models.Q(status="pending")  # LinePushItem.Status.PENDING


def lease_length() -> timedelta:
    """How long a group post's claim holds unless its worker renews it (core/keeper.py)."""
    return timedelta(seconds=settings.LINEPUSH_LEASE_SECONDS)


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
    MAX_ATTEMPTS = max_attempts("line_push")
    # A post's claim (core/due.py): the row is held until lease_until by the token in claimed_by.
    LEASE = Lease(length=lease_length)

    # No index of its own: the tenant leads the dedupe key's and the rate window's indexes.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="line_push_items", db_index=False
    )
    ext_group_id = models.CharField(_("投稿先グループID"), max_length=64)
    trigger_type = models.CharField(_("トリガー"), max_length=32, choices=Trigger.choices)
    payload = models.JSONField(_("メッセージ"), help_text=_("LINE メッセージオブジェクトの配列（1〜5 件）"))
    source_table = models.CharField(_("発生元テーブル"), max_length=64, blank=True)
    source_id = models.CharField(_("発生元ID"), max_length=128, blank=True)
    # Unique per tenant and space (Meta): a key is a tenant's own name for a post, never a
    # claim on another tenant's. automedia's producers share the space "" and each API token
    # has its own ("token:<id>"), so a token can neither take a producer's predictable key
    # (`task_approved:<slug>:<issue>:<seq>`) nor another token's.
    dedupe_key = models.CharField(_("重複排除キー"), max_length=255)
    dedupe_space = models.CharField(_("重複排除キーの空間"), max_length=32, blank=True, editable=False)
    # Who queued it: the producer's name (ORIGINS), or "api" with the token.
    origin = models.CharField(
        _("発生元"), max_length=32, blank=True, editable=False, choices=list(ORIGINS.items())
    )
    api_token = models.ForeignKey(
        LineApiToken,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        db_index=False,  # Meta: indexed where set
        verbose_name=_("API トークン"),
    )
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
        db_index=False,  # Meta: indexed where set
        verbose_name=_("承認者"),
    )
    approved_at = models.DateTimeField(_("承認日時"), null=True, blank=True)
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,  # Meta: indexed where set
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
            models.UniqueConstraint(
                fields=["tenant", "dedupe_space", "dedupe_key"], name="uniq_line_push_dedupe_key"
            )
        ]
        indexes = [
            # The claim reads the due rows in (scheduled_at, id) order and counts the ones in
            # flight on every scheduler pass: both from an index, not a scan and sort of the
            # table. Both hold pending rows only: a post is written three times on its way
            # out (claim, take-over, sent), and no other row version (a sent post above all,
            # most of the table) adds an entry to them (docs/benchmarks/history/linepush.md).
            models.Index(fields=["scheduled_at", "id"], name="line_push_due_idx", condition=_PENDING),
            models.Index(fields=["lease_until"], name="line_push_lease_idx", condition=_PENDING),
            models.Index(fields=["tenant", "ext_group_id", "reserved_at"], name="line_push_window_idx"),
            # For a deleted user's SET NULL; almost every post has neither.
            models.Index(
                fields=["approved_by"],
                name="line_push_approved_by_idx",
                condition=models.Q(approved_by__isnull=False),
            ),
            models.Index(
                fields=["api_token"],
                name="line_push_api_token_idx",
                condition=models.Q(api_token__isnull=False),
            ),
            models.Index(
                fields=["rejected_by"],
                name="line_push_rejected_by_idx",
                condition=models.Q(rejected_by__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        # What a manager reads in titles and messages: the trigger and the time, never the
        # dedupe key (`demo:reminder:1`), which is the producer's and the API caller's name.
        when = self.scheduled_at.astimezone(JST).strftime("%m/%d %H:%M") if self.scheduled_at else ""
        return f"{self.get_trigger_type_display()}（{when}）"

    def save(self, *args, **kwargs) -> None:
        if not self.retry_key:
            self.retry_key = self.derived_retry_key()
        super().save(*args, **kwargs)

    def derived_retry_key(self) -> str:
        """A UUID from tenant, space and dedupe key: two tenants' or origins' equal keys never
        share one.

        LINE accepts a request with a given retry key once in 24 h
        (https://developers.line.biz/en/docs/messaging-api/retrying-api-request/), and tenants
        may post through the same channel.
        """
        space = f"{self.dedupe_space}:" if self.dedupe_space else ""
        return str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{self.tenant_id}:{space}{self.dedupe_key}"))

    @property
    def origin_label(self) -> str:
        if self.origin == API_ORIGIN:
            return f"API トークン「{self.api_token}」" if self.api_token else "API トークン（削除済み）"
        return f"automedia（{ORIGINS.get(self.origin, self.origin or '不明')}）"

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

    Producers go on with the other posts; this row is how a manager sees
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
        return f"{self.get_trigger_type_display()} {self.source_id}"

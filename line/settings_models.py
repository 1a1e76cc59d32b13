"""A tenant's LINE settings and what its messages cost: the kinds of automatic post a group
may take (`Trigger`), the settings (plan, time zone, the reply to a new follower, the group
posts' limits), the plans and the month's use. Django loads these models through
line/models.py."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.models import Tenant
from line.coupons import coupon_message_problems
from line.messages import validate_line_messages


class Trigger(models.TextChoices):
    TASK_APPROVED = "task_approved", _("タスク承認")
    REMINDER = "reminder", _("リマインダー")
    ESCALATION = "escalation", _("エスカレーション")
    SIGNAL_APPROVED = "signal_approved", _("外部シグナル承認")
    MORNING_DIGEST = "morning_digest", _("朝のダイジェスト")


# Bounds of the rate limits managers set: a window of at most a day, and a count no group
# or tenant sends in one (a number past them is a typo, not a limit).
MAX_POSTS_PER_WINDOW = 10_000
WINDOW_BOUNDS = [MinValueValidator(1), MaxValueValidator(24 * 60 * 60)]


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
    if value in ([], None):
        return
    problems = validate_line_messages(value)
    if problems:
        raise ValidationError(problems)


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
    # The highest price of one extra message (LINE lowers it in volume tiers): the forecast
    # states an overage's cost at this price, so it is never under-estimated.
    extra_message_price_yen = models.DecimalField(
        _("追加メッセージの単価（上限・円）"), max_digits=6, decimal_places=2, null=True, blank=True
    )

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE プラン")
        verbose_name_plural = pgettext_lazy("models", "LINE プラン")
        db_table = "linepush_lineplan"  # made by linepush's migrations, kept when the model moved
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
        help_text=_(
            "空欄 = LINE 自身の上限（LINE に確認した今月の上限）だけで判定。LINE が上限なしと答えれば通数では止めません"
        ),
    )
    tenant_rate_limit = models.PositiveIntegerField(
        _("テナント全体の上限（件）"),
        null=True,
        blank=True,
        help_text=_("空欄 = 制限なし"),
        validators=[MaxValueValidator(MAX_POSTS_PER_WINDOW)],
    )
    tenant_rate_window_seconds = models.PositiveIntegerField(
        _("テナント全体の上限の期間（秒）"), default=300, validators=WINDOW_BOUNDS
    )
    timezone = models.CharField(
        _("タイムゾーン"), max_length=64, default="Asia/Tokyo", validators=[validate_timezone]
    )
    digest_hour = models.PositiveSmallIntegerField(
        _("朝のダイジェストの時刻（時）"), default=8, validators=[MaxValueValidator(23)]
    )
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
        db_table = "linepush_linepushsettings"

    def __str__(self) -> str:
        return gettext("%(tenant)s の LINE 投稿設定") % {"tenant": self.tenant.slug}

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def clean(self) -> None:
        if self.tenant_id and (
            problems := coupon_message_problems(tenant_id=self.tenant_id, messages=self.registration_messages)
        ):
            raise ValidationError({"registration_messages": problems})


class LineMonthlyUsage(models.Model):
    """Messages counted against the tenant's monthly allowance (per member of a group).

    Counting: https://developers.line.biz/en/docs/messaging-api/pricing/.

    `messages` is automedia's running count; the daily check replaces it with LINE's
    own `totalUsage` (which also counts deliveries and manual posts) and stores LINE's limit.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_usage")
    month = models.CharField(_("月"), max_length=7, help_text=_("年-月（テナントのタイムゾーンで数えます）"))
    messages = models.PositiveIntegerField(_("使用数"), default=0)
    line_limit = models.PositiveIntegerField(_("LINE の上限"), null=True, blank=True)
    line_total_usage = models.PositiveIntegerField(_("LINE の使用数"), null=True, blank=True)
    checked_at = models.DateTimeField(_("LINE で確認した日時"), null=True, blank=True)
    warned_at = models.DateTimeField(_("80% 警告日時"), null=True, blank=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE 月間使用数")
        verbose_name_plural = pgettext_lazy("models", "LINE 月間使用数")
        db_table = "linepush_linemonthlyusage"
        constraints = [models.UniqueConstraint(fields=["tenant", "month"], name="uniq_line_usage_month")]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.month}: {self.messages}"

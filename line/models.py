"""What automedia keeps of a tenant's LINE account: the groups and rooms the bot is in and
the automatic posts each takes, the followers and their tags, the webhook's events, the
survey rules and answers, coupons, the plan, settings and the month's use.

The tables were made by linepush's migrations and keep their names (`linepush_<model>`):
the models moved here, the rows never did.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.i18n import japanese
from core.models import Tenant

# Django registers an app's models from its models.py: these live in modules of their own.
from line.coupon_models import LineCoupon  # noqa: F401
from line.inbound_models import (  # noqa: F401
    LineAnswer,
    LineContact,
    LineErasure,
    LineSurveyRule,
    LineWebhookEvent,
)
from line.settings_models import (  # noqa: F401
    MAX_POSTS_PER_WINDOW,
    WINDOW_BOUNDS,
    LineMonthlyUsage,
    LinePlan,
    LinePushSettings,
    Trigger,
    validate_triggers,
)


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
    rate_limit_count = models.PositiveIntegerField(
        _("グループの上限（件）"), default=3, validators=[MaxValueValidator(MAX_POSTS_PER_WINDOW)]
    )
    rate_limit_window_seconds = models.PositiveIntegerField(
        _("グループの上限の期間（秒）"), default=300, validators=WINDOW_BOUNDS
    )
    joined_at = models.DateTimeField(_("参加日時"), null=True, blank=True)
    left_at = models.DateTimeField(_("退出日時"), null=True, blank=True)
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    updated_at = models.DateTimeField(_("更新日時"), auto_now=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE グループ")
        verbose_name_plural = pgettext_lazy("models", "LINE グループ")
        constraints = [models.UniqueConstraint(fields=["tenant", "group_id"], name="uniq_line_source")]
        db_table = "linepush_linesource"  # made by linepush's migrations, kept when the model moved

    def __str__(self) -> str:
        return self.name or self.group_id

    def save(self, *args, **kwargs) -> None:
        # A row is LINE's group: moved onto another group's id (or tenant) it would lend that
        # group its member count, and the quota would count the big group as the small one.
        stored = getattr(self, "_stored_ids", None)
        if stored is not None and None not in stored and stored != (self.tenant_id, self.group_id):
            raise ValueError("a LINE group row keeps its tenant and group id")
        super().save(*args, **kwargs)
        self._stored_ids = (self.tenant_id, self.group_id)

    @classmethod
    def from_db(cls, db, field_names, values):
        row = super().from_db(db, field_names, values)
        row._stored_ids = (row.__dict__.get("tenant_id"), row.__dict__.get("group_id"))
        return row

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

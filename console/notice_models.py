"""What a tenant sets up for its managers: test recipients (テスト配信) and where the notices
of new 要対応 rows go; and the record of each row noticed, so none is sent twice."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.models import Tenant

# LINE's ids: a user "U" and a group "C", each followed by 32 hex digits
# (https://developers.line.biz/en/docs/messaging-api/getting-user-ids/).
USER_ID = RegexValidator(r"^U[0-9a-f]{32}$", _("LINE のユーザーIDは U と 32 桁の英数字です。"))
USER_OR_GROUP_ID = RegexValidator(
    r"^[UC][0-9a-f]{32}$", _("LINE のユーザーID（U…）かグループID（C…）を入れてください。")
)


class LineTestRecipient(models.Model):
    """A manager's own LINE account that receives テスト配信, as LINE Official Account
    Manager's test recipients: added by user id, never sent a real delivery."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", verbose_name=_("テナント"))
    name = models.CharField(_("名前"), max_length=100)
    user_id = models.CharField(_("LINE ユーザーID"), max_length=33, validators=[USER_ID])
    active = models.BooleanField(_("送る"), default=True)
    created_at = models.DateTimeField(_("登録日時"), auto_now_add=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "テスト配信の宛先")
        verbose_name_plural = pgettext_lazy("models", "テスト配信の宛先")
        constraints = [models.UniqueConstraint(fields=["tenant", "user_id"], name="test_recipient_once")]

    def __str__(self) -> str:
        return self.name


class NoticeSettings(models.Model):
    """Where a tenant's notices of new 要対応 rows go; without a row, by mail to its managers."""

    class Via(models.TextChoices):
        MAIL = "mail", _("メール（テナントのマネージャー全員）")
        LINE = "line", _("LINE（グループまたはユーザー）")

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, related_name="notice_settings", verbose_name=_("テナント")
    )
    enabled = models.BooleanField(_("要対応を通知する"), default=True)
    via = models.CharField(_("通知先"), max_length=8, choices=Via.choices, default=Via.MAIL)
    line_to = models.CharField(
        _("LINE の通知先ID"),
        max_length=33,
        blank=True,
        validators=[USER_OR_GROUP_ID],
        help_text=_("通知先が LINE のとき: グループID（C…）かユーザーID（U…）。"),
    )

    class Meta:
        verbose_name = pgettext_lazy("model", "要対応の通知")
        verbose_name_plural = pgettext_lazy("models", "要対応の通知")

    def __str__(self) -> str:
        return str(self.tenant)


class AttentionNotice(models.Model):
    """One 要対応 row, noticed: claimed by a run of the notices' step, then sent (with the
    other new rows of its tenant in one message). Its key names the row once."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", verbose_name=_("テナント"))
    key = models.CharField(_("行"), max_length=100)
    text = models.CharField(_("内容"), max_length=300)
    url = models.CharField(_("リンク"), max_length=300, blank=True)
    created_at = models.DateTimeField(_("見つけた日時"), auto_now_add=True)
    claim = models.CharField(max_length=36, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(_("通知日時"), null=True, blank=True)
    sent_to = models.CharField(_("通知先"), max_length=200, blank=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "要対応の通知履歴")
        verbose_name_plural = pgettext_lazy("models", "要対応の通知履歴")
        constraints = [models.UniqueConstraint(fields=["tenant", "key"], name="attention_notice_once")]
        indexes = [models.Index(fields=["tenant", "sent_at"], name="attention_notice_unsent")]

    def __str__(self) -> str:
        return self.text

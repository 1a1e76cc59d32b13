"""A tenant's LINE coupons, created through the Messaging API coupon endpoints and sent as a
`coupon` message (`couponId`). LINE keeps the coupon; this row is what was asked of LINE
and what LINE answered; what the account has (coupons made in LINE Official Account Manager
too) is read from LINE (line/coupons.py). A coupon cannot be edited once created: close it
and create another. Django loads this model through line/models.py.

Fields: messaging-api.yml `CouponCreateRequest` (title ≤ 60, description ≤ 1,000, start and
end in epoch seconds with a `timezone`, `maxUseCountPerTicket` 1 or -1 for no limit,
`visibility` UNLISTED / PUBLIC, `reward`: cashBack / discount / free / gift / others).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.models import Tenant


class LineCoupon(models.Model):
    class Reward(models.TextChoices):
        DISCOUNT = "discount", _("割引")
        CASH_BACK = "cashBack", _("キャッシュバック")
        FREE = "free", _("無料")
        GIFT = "gift", _("プレゼント")
        OTHERS = "others", _("その他")

    class Price(models.TextChoices):
        NONE = "", _("指定なし")
        FIXED = "fixed", _("金額（円）")
        PERCENTAGE = "percentage", _("割合（%）")

    class Visibility(models.TextChoices):
        UNLISTED = "UNLISTED", _("限定公開（メッセージで配布）")
        PUBLIC = "PUBLIC", _("公開")

    class Usage(models.IntegerChoices):
        ONCE = 1, _("1 回限り")
        UNLIMITED = -1, _("何度でも")

    class Status(models.TextChoices):
        RUNNING = "RUNNING", _("配布中")
        CLOSED = "CLOSED", _("終了")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_coupons")
    coupon_id = models.CharField(_("クーポンID"), max_length=100, editable=False)
    title = models.CharField(_("タイトル"), max_length=60)
    description = models.TextField(_("説明"), max_length=1000, blank=True)
    reward = models.CharField(_("特典"), max_length=16, choices=Reward.choices, default=Reward.DISCOUNT)
    price = models.CharField(_("特典の内容"), max_length=16, choices=Price.choices, blank=True)
    amount = models.PositiveIntegerField(_("金額（円）または割合（%）"), null=True, blank=True)
    starts_at = models.DateTimeField(_("利用開始"))
    ends_at = models.DateTimeField(_("有効期限"))
    max_use_per_ticket = models.SmallIntegerField(_("利用回数"), choices=Usage.choices, default=Usage.ONCE)
    visibility = models.CharField(
        _("公開範囲"), max_length=16, choices=Visibility.choices, default=Visibility.UNLISTED
    )
    status = models.CharField(
        _("状態"), max_length=16, choices=Status.choices, default=Status.RUNNING, editable=False
    )
    created_at = models.DateTimeField(_("作成日時"), auto_now_add=True)
    closed_at = models.DateTimeField(_("終了日時"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE クーポン")
        verbose_name_plural = pgettext_lazy("models", "LINE クーポン")
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["tenant", "coupon_id"], name="uniq_line_coupon")]
        db_table = "linepush_linecoupon"  # made by linepush's migrations, kept when the model moved

    def __str__(self) -> str:
        return f"{self.title} ({self.coupon_id or '-'})"

    def clean(self) -> None:
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError({"ends_at": gettext("有効期限は利用開始より後にしてください。")})
        if self.reward in (self.Reward.DISCOUNT, self.Reward.CASH_BACK) and not self.price:
            raise ValidationError(
                {"price": gettext("割引とキャッシュバックは金額か割合を指定してください。")}
            )
        if self.reward not in (self.Reward.DISCOUNT, self.Reward.CASH_BACK):
            self.price, self.amount = self.Price.NONE, None
        if self.price == self.Price.PERCENTAGE and not 1 <= (self.amount or 0) <= 99:
            raise ValidationError({"amount": gettext("割合は 1〜99 (%) で指定してください。")})
        if self.price == self.Price.FIXED and not (self.amount or 0) >= 1:
            raise ValidationError({"amount": gettext("金額は 1 円以上で指定してください。")})

    def is_running(self) -> bool:
        return self.status == self.Status.RUNNING

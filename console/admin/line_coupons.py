"""LINE クーポン: coupons are created at LINE from here and closed from the list; a created
coupon is never edited (LINE cannot change one). The follow reply's coupon is picked from the
account's running coupons as LINE lists them (console/admin/line_reply.py)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.access import TenantScopedAdmin
from console.actions import bulk_action
from console.services import ActionResult
from core.access import may_act_somewhere
from core.transport import TransportError
from line.coupons import coupon_close, coupon_create
from line.models import LineCoupon

COUPON_FIELDS = ("tenant", "title", "description", "reward", "price", "amount", "starts_at", "ends_at")
COUPON_FIELDS += ("max_use_per_ticket", "visibility")


class LineCouponForm(forms.ModelForm):
    """Creating a coupon creates it at LINE first: LINE's refusal is a form error and
    nothing is stored; LINE's `couponId` is stored with the row."""

    class Meta:
        model = LineCoupon
        fields = COUPON_FIELDS

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.errors or self.instance.pk:
            return
        try:
            coupon_create(coupon=self.instance)
        except TransportError as exc:
            self.add_error(
                None, gettext("LINE でクーポンを作成できませんでした: %(error)s") % {"error": exc.message}
            )


def _close(coupon: LineCoupon, user) -> ActionResult:
    try:
        closed = coupon_close(coupon=coupon)
    except TransportError as exc:
        return ActionResult(
            False,
            gettext("%(coupon)s: LINE で終了できませんでした: %(error)s")
            % {"coupon": coupon, "error": exc.message},
        )
    if not closed:
        return ActionResult(False, gettext("%(coupon)s は終了済みです。") % {"coupon": coupon})
    return ActionResult(True, "")


@admin.register(LineCoupon)
class LineCouponAdmin(TenantScopedAdmin):
    """A coupon is created here (at LINE and in the list) and never edited: LINE cannot
    change one, so a wrong coupon is closed and another created."""

    form = LineCouponForm
    list_display = ("title", "coupon_id", "tenant", "reward", "starts_at", "ends_at", "visibility", "status")
    list_filter = ("tenant", "status", "reward")
    search_fields = ("title", "coupon_id")
    actions = ["close"]

    # (Where the base works out its read-only fields, so the tenant shows by its labelled column.)
    def _readonly(self, request: HttpRequest, obj) -> tuple[str, ...]:
        if obj is not None:
            return (*COUPON_FIELDS, "coupon_id", "status", "created_at", "closed_at")
        return super()._readonly(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser  # LINE keeps the coupon: its row stays as the record

    def save_model(self, request: HttpRequest, obj: LineCoupon, form, change: bool) -> None:
        if obj.pk is None:  # the form stored it with LINE's couponId
            super().save_model(request, obj, form, change)

    def get_actions(self, request: HttpRequest):
        return super().get_actions(request) if may_act_somewhere(request.user) else {}

    @admin.action(description=_("選択したクーポンを終了する"))
    def close(self, request, queryset: QuerySet[LineCoupon]) -> None:
        bulk_action(self, request, queryset, _close, done_text=_("%(count)d 件のクーポンを終了しました。"))

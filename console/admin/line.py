"""The admin of a tenant's LINE settings (the plan, the reply to a new follower, the group
posts' limits), the plans and the month's use."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin, TenantScopedAdmin
from console.admin.line_reply import LinePushSettingsForm, registration_json, registration_preview
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from line.usage import line_usage


@admin.register(LinePushSettings)
class LinePushSettingsAdmin(TenantScopedAdmin):
    form = LinePushSettingsForm  # the follow reply as text, image and coupon, not its JSON
    list_display = ("tenant", "plan_label", "month_usage", "tenant_rate_limit", "timezone", "digest_hour")

    def get_fields(self, request: HttpRequest, obj=None):
        # The plan is a fact of the LINE contract, like the channel token, and it decides
        # whether an approval over the month's messages is refused: set by superusers only;
        # others read it, the default plan named when none is set.
        fields = [
            f for f in super().get_fields(request, obj) if f not in ("plan_label", "month_usage_detail")
        ]
        if not request.user.is_superuser:
            fields = ["plan_label" if f == "plan" else f for f in fields]
        return [*fields, "month_usage_detail"] if obj is not None else fields

    # A row deleted and added again would come back without the plan a superuser set:
    # managers edit the row's other fields, only superusers add or delete it.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        fields = [*super().get_readonly_fields(request, obj), "plan_label", "month_usage_detail"]
        if obj is not None:
            fields.insert(0, registration_preview)
        return [*fields, registration_json] if request.user.is_superuser else [*fields, "plan"]

    @admin.display(description=_("LINE プラン"))
    def plan_label(self, obj: LinePushSettings) -> str:
        return line_usage(tenant=obj.tenant).plan_label

    @admin.display(description=_("LINE メッセージ使用数"))
    def month_usage(self, obj: LinePushSettings) -> str:
        return str(line_usage(tenant=obj.tenant))

    @admin.display(description=_("LINE メッセージ使用数"))
    def month_usage_detail(self, obj: LinePushSettings) -> str:
        """The figure and its two parts: LINE's count (when it was read) and automedia's since."""
        usage = line_usage(tenant=obj.tenant)
        parts = render_to_string("admin/console/line_usage.html", {"u": usage})
        return format_html("{}{}", usage, parts)


@admin.register(LinePlan)
class LinePlanAdmin(admin.ModelAdmin):
    list_display = ("name", "code", "monthly_messages", "additional_messages", "extra_message_price_yen")


@admin.register(LineMonthlyUsage)
class LineMonthlyUsageAdmin(RecordAdmin):
    """The month's count that the quota hold reads: never edited by hand."""

    list_display = (
        "tenant",
        "month",
        "messages",
        "line_limit",
        "line_total_usage",
        "checked_at",
        "warned_at",
    )
    list_filter = ("tenant",)

"""Admin for tenants, tasks and schedules (the full managers' admin is a later issue)."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from automedia_site.crypto import mask
from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule, MessageTemplate, Tenant

SECRET_FIELDS = ("backlog_api_key", "line_channel_token", "line_channel_secret")


class TenantForm(forms.ModelForm):
    """Secrets are write-only: shown masked, kept when the field is left empty."""

    class Meta:
        model = Tenant
        # generated; rotate with `add_tenant --rotate-webhook-token`
        exclude = ("webhook_token",)  # noqa: DJ006
        widgets = {f: forms.PasswordInput(render_value=False) for f in SECRET_FIELDS}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in SECRET_FIELDS:
            current = getattr(self.instance, name, "")
            self.fields[name].required = name == "backlog_api_key" and not current
            if current:
                self.fields[name].help_text = f"現在: {mask(current)}（変更する場合のみ入力）"

    def clean(self):
        cleaned = super().clean()
        for name in SECRET_FIELDS:
            if not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(self.instance, name)
        return cleaned


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    form = TenantForm
    list_display = (
        "slug",
        "name",
        "backlog_base_url",
        "backlog_project_key",
        "is_active",
        "line_token_invalid_at",
    )
    search_fields = ("slug", "name", "backlog_project_key")
    readonly_fields = ("webhook_token_masked", "last_activity_id", "created_at", "updated_at")

    @admin.display(description="Webhook トークン")
    def webhook_token_masked(self, obj: Tenant) -> str:
        return mask(obj.webhook_token)


class ScheduleInline(admin.StackedInline):
    model = DeliverySchedule
    extra = 0
    can_delete = False
    readonly_fields = (
        "name",
        "due_at",
        "reason",
        "lease_until",
        "claimed_by",
        "attempts",
        "last_error",
    )


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = (
        "created_at",
        "approval_seq",
        "chunk",
        "endpoint",
        "status_code",
        "request_id",
        "outcome",
        "error",
        "duration_ms",
    )
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(ContentTask)
class ContentTaskAdmin(admin.ModelAdmin):
    list_display = ("issue_key", "summary", "channel", "publish_at", "status_name", "delivered_at")
    list_filter = ("tenant", "status_name", "channel")
    search_fields = ("issue_key", "summary")
    inlines = [ScheduleInline, AttemptInline]
    readonly_fields = [f.name for f in ContentTask._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(DeliverySchedule)
class DeliveryScheduleAdmin(admin.ModelAdmin):
    list_display = ("name", "due_at", "reason", "attempts", "lease_until", "last_error")
    list_filter = ("tenant", "reason")
    search_fields = ("name",)
    readonly_fields = [f.name for f in DeliverySchedule._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(MessageTemplate)
class MessageTemplateAdmin(admin.ModelAdmin):
    """Revisions are immutable: import them with `manage.py import_templates DIR`."""

    list_display = ("name", "rev", "tenant", "channel", "created_at")
    list_filter = ("tenant", "channel")
    search_fields = ("name", "rev")
    readonly_fields = [f.name for f in MessageTemplate._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

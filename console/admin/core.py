"""Tenants (managers edit their own tenant's settings; superusers its endpoints and
secrets) and memberships (superusers)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from console.access import TenantScopedAdmin
from console.widgets import OperatorsWidget, QuietHoursWidget
from core.crypto import mask
from core.models import Tenant, TenantMembership, validate_max_concurrent_deliveries

SECRET_FIELDS = ("backlog_api_key", "line_channel_token", "line_channel_secret")
ENDPOINT_FIELDS = ("backlog_base_url", "backlog_project_key")
# The slug is in both webhook URLs, is_active switches the tenant off, and the concurrency
# limit sizes what the tenant takes of the shared workers: a superuser's decisions.
SUPERUSER_FIELDS = (*ENDPOINT_FIELDS, "slug", "is_active", "max_concurrent_deliveries")


class TenantForm(forms.ModelForm):
    """The superusers' form. Secrets are write-only: shown masked, kept when the field is left empty.

    A new Backlog URL needs the API key typed again in the same save: the stored key is
    never sent to a host that the person who knows the key did not confirm.
    """

    class Meta:
        model = Tenant
        # generated; rotate with `add_tenant --rotate-webhook-token`
        exclude = ("webhook_token",)  # noqa: DJ006
        widgets = {f: forms.PasswordInput(render_value=False) for f in SECRET_FIELDS}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "max_concurrent_deliveries" in self.fields:
            self.fields["max_concurrent_deliveries"].validators.append(validate_max_concurrent_deliveries)
        for name in SECRET_FIELDS:
            current = getattr(self.instance, name, "")
            self.fields[name].required = name == "backlog_api_key" and not current
            if current:
                self.fields[name].help_text = _("現在: %(masked)s（変更する場合のみ入力）") % {
                    "masked": mask(current)
                }

    def clean(self):
        cleaned = super().clean()
        moved = self.instance.pk and "backlog_base_url" in self.changed_data
        if moved and not cleaned.get("backlog_api_key"):
            self.add_error(
                "backlog_api_key",
                _("Backlog URL を変更するときは、同じ保存で API キーも入力し直してください。"),
            )
        for name in SECRET_FIELDS:
            if not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(self.instance, name)
        token = cleaned.get("line_channel_token")
        if self.instance.pk and token and token != self.instance.line_channel_token:
            # A new token: its refusal mark (set by the system, read-only here) no longer holds.
            self.instance.line_token_invalid_at = None
        return cleaned


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    """Managers edit their own tenant's settings (operators, quiet hours, …) and see its Backlog
    URL, project and secrets read-only and masked; only superusers change those, add or delete."""

    tenant_path = ""
    form = TenantForm
    secret_fields = (*SECRET_FIELDS, "webhook_token")
    superuser_fields = SUPERUSER_FIELDS
    list_display = (
        "slug",
        "name",
        "backlog_base_url",
        "backlog_project_key",
        "is_active",
        "line_token_invalid_at",
    )
    search_fields = ("slug", "name", "backlog_project_key")
    # What the system sets: LINE's refusal of the token is detected, not typed in.
    readonly_fields = ("line_token_invalid_at", "last_activity_id", "created_at", "updated_at")

    def formfield_for_dbfield(self, db_field, request: HttpRequest, **kwargs):
        if db_field.name == "quiet_hours":  # the superusers' form and the managers' alike
            kwargs["widget"] = QuietHoursWidget
        if db_field.name == "operators":  # the rows say what the model's help says of the JSON
            kwargs.update(widget=OperatorsWidget, help_text="")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser


@admin.register(TenantMembership)
class TenantMembershipAdmin(admin.ModelAdmin):
    """Who belongs to which tenant; only superusers grant access (Django's permissions)."""

    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "tenant__slug", "tenant__name")
    autocomplete_fields = ("user",)

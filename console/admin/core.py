"""Tenants (managers edit their own tenant's settings; superusers its endpoints and
secrets) and memberships (superusers)."""

from __future__ import annotations

import copy

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from console.access import TenantScopedAdmin
from console.connections import connection_rows
from console.widgets import OperatorsWidget, QuietHoursWidget, plain_label
from core.access import may_act, require_act
from core.crypto import mask
from core.models import Tenant, TenantMembership, validate_max_concurrent_deliveries
from deliveries.setup.connections import connections_check, connections_record, tenant_checks, tenant_setup

SECRET_FIELDS = ("backlog_api_key", "line_channel_token", "line_channel_secret")
ENDPOINT_FIELDS = ("backlog_base_url", "backlog_project_key")
# The slug is in both webhook URLs, is_active switches the tenant off, and the concurrency
# limit sizes what the tenant takes of the shared workers: a superuser's decisions.
SUPERUSER_FIELDS = (*ENDPOINT_FIELDS, "slug", "is_active", "max_concurrent_deliveries")
# What a connection check reads: a change to one of them is checked before it is saved.
CONNECTION_FIELDS = ("backlog_base_url", "backlog_api_key", "backlog_project_key", "line_channel_token")


class TenantForm(forms.ModelForm):
    """The superusers' form. Secrets are write-only: shown masked, kept when the field is left empty.

    A new Backlog URL needs the API key typed again in the same save: the stored key is
    never sent to a host that the person who knows the key did not confirm.
    """

    skip_connection_check = forms.BooleanField(
        label=_("接続を確認せずに保存する"),
        required=False,
        help_text=_("Backlog・LINE に問い合わせずに保存します（あとで「接続状況」で確認してください）。"),
    )

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
        self.connection_results = self._connections_checked(cleaned)
        return cleaned

    def _connections_checked(self, cleaned: dict) -> list:
        """Check Backlog and LINE with the values typed in, before anything is saved."""
        changed = any(cleaned.get(f) != getattr(self.instance, f, None) for f in CONNECTION_FIELDS)
        if self.errors or not changed or cleaned.get("skip_connection_check"):
            return []
        candidate = copy.copy(self.instance)
        for name in (*CONNECTION_FIELDS, "slug"):
            if name in cleaned:
                setattr(candidate, name, cleaned[name])
        results = tenant_checks(tenant=candidate)
        for result in results:
            if not result.ok:
                self.add_error(None, f"{result.platform}: {result.problem}")
        return results


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
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "publish_time_policy" and formfield is not None:
            formfield.choices = [(value, plain_label(label)) for value, label in formfield.choices]
        return formfield

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser

    def get_list_display(self, request: HttpRequest):
        return [*super().get_list_display(request), "connections_link"]

    @admin.display(description=_("接続状況"))
    def connections_link(self, obj: Tenant) -> str:
        url = reverse("admin:core_tenant_connections", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, _("接続状況"))

    def save_model(self, request: HttpRequest, obj: Tenant, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        connections_record(tenant=obj, results=getattr(form, "connection_results", []))
        if getattr(form, "cleaned_data", {}).get("skip_connection_check"):
            messages.warning(request, _("接続を確認せずに保存しました。「接続状況」で確認してください。"))

    # -- 接続状況 -----------------------------------------------------------------------

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/connections/", view(self.connections_view), name="core_tenant_connections"
            ),
            path(
                "<path:object_id>/connections/check/",
                view(self.connections_check_view),
                name="core_tenant_connections_check",
            ),
            path(
                "<path:object_id>/connections/setup/",
                view(self.connections_setup_view),
                name="core_tenant_connections_setup",
            ),
            *super().get_urls(),
        ]

    def connections_view(self, request: HttpRequest, object_id: str, report=None) -> TemplateResponse:
        """Each platform's last check; anyone who sees the tenant reads it."""
        tenant = self.get_object(request, object_id)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "tenant": tenant,
            "rows": connection_rows(tenant),
            "report": report,
            "can_check": may_act(request.user, tenant.pk),
            "can_setup": request.user.is_superuser,
        }
        return TemplateResponse(request, "admin/core/tenant/connections.html", context)

    def connections_check_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """「今すぐ確認」: a manager of the tenant (or a superuser) runs every check now."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        tenant = self.get_object(request, object_id)
        require_act(request.user, tenant.pk)
        failed = sum(not result.ok for result in connections_check(tenant=tenant))
        if failed:
            messages.error(request, _("%(count)d 件の接続に問題があります。") % {"count": failed})
        else:
            messages.success(request, _("すべての接続を確認しました。"))
        return HttpResponseRedirect(reverse("admin:core_tenant_connections", args=[tenant.pk]))

    def connections_setup_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """setup_tenant from the page: it changes the Backlog project and the LINE channel, the
        integration settings only superusers change."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        tenant = self.get_object(request, object_id)
        if not request.user.is_superuser:
            raise PermissionDenied(_("設定を変更できるのはスーパーユーザーだけです。"))
        report = tenant_setup(tenant=tenant)
        return self.connections_view(request, object_id, report=report.lines)


@admin.register(TenantMembership)
class TenantMembershipAdmin(admin.ModelAdmin):
    """Who belongs to which tenant; only superusers grant access (Django's permissions)."""

    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "tenant__slug", "tenant__name")
    autocomplete_fields = ("user",)

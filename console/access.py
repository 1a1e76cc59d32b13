"""Tenant-scoped access for the admin (managers see and act on their own tenant only).

A staff user belongs to tenants through `TenantMembership` (manager or viewer);
superusers see everything (who may see or act on which tenant: `core.access`). Every
ModelAdmin of tenant data derives from
`TenantScopedAdmin`, which scopes lists, details, actions and exports to the
user's tenants, answers 404 for another tenant's object, and lets only managers act.
Access comes from memberships, not from Django's per-model permissions.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest
from django.template.loader import render_to_string
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from console.paginator import LargeTablePaginator
from core.access import managed_tenant_ids, may_act, may_see, scope, tenant_id_of, tenant_roles
from core.crypto import mask
from core.models import Tenant


class TenantFilter(admin.RelatedFieldListFilter):
    """The tenant filter lists only the user's own tenants."""

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        self.title = _("テナント")  # the models' `tenant` fields carry no Japanese name

    def field_choices(self, field, request, model_admin):
        tenants = scope(Tenant.objects.order_by("slug"), request.user, "")
        return [(t.pk, str(t)) for t in tenants]


class TenantScopedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose every list, detail, action and export is limited to the user's tenants."""

    tenant_path = "tenant"  # lookup from the model to its Tenant; "" for Tenant itself
    shared_without_tenant = False  # rows without a tenant are shared (read-only for managers)
    # Encrypted secrets: only a superuser types one in (write-only, through the admin's own
    # form); everyone else gets them masked, as a read-only page would print them in the clear.
    secret_fields: tuple[str, ...] = ()
    # Integration endpoints (hosts the server calls with the tenant's secrets): a superuser
    # changes them, everyone else reads them (a manager must not redirect a key).
    superuser_fields: tuple[str, ...] = ()

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        qs = super().get_queryset(request)
        return scope(qs, request.user, self.tenant_path, shared=self.shared_without_tenant)

    def get_object(self, request: HttpRequest, object_id: str, from_field=None):
        """Another tenant's object (or none at all) answers 404, never a redirect that confirms it."""
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404(_("見つかりません。"))
        return obj

    def get_list_display(self, request: HttpRequest):
        # The models' `tenant` foreign keys carry no Japanese name: a labelled column instead.
        return ["tenant_column" if f == "tenant" else f for f in super().get_list_display(request)]

    @admin.display(description=_("テナント"), ordering="tenant__slug")
    def tenant_column(self, obj) -> str:
        return str(obj.tenant)

    def get_list_select_related(self, request: HttpRequest):
        # Django joins the foreign keys of list_display itself, but the tenant column is a
        # method: without this, each row of a page reads its tenant with a query of its own.
        selected = super().get_list_select_related(request)
        if selected is False and self.tenant_path == "tenant" and "tenant" in self.list_display:
            return True
        return selected

    def get_list_filter(self, request: HttpRequest):
        return [(f, TenantFilter) if f == self.tenant_path == "tenant" else f for f in self.list_filter]

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if db_field.related_model is Tenant:
            kwargs.setdefault("label", _("テナント"))
            ids = managed_tenant_ids(request.user)
            if ids is not None:
                kwargs["queryset"] = Tenant.objects.filter(pk__in=ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changelist_formset(self, request: HttpRequest, **kwargs):
        """List edits: a row of a tenant the user only views must not change (the list shows
        every visible row, and Django checks only the model-wide permission)."""
        formset = super().get_changelist_formset(request, **kwargs)
        return type(formset.__name__, (ScopedFormSetMixin, formset), {"user": request.user, "admin": self})

    # -- secrets: never in the clear on a read-only page -----------------------------

    def _hides_secrets(self, request: HttpRequest, obj) -> bool:
        return bool(self.secret_fields) and not request.user.is_superuser

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        if self._hides_secrets(request, obj):
            kwargs["form"] = forms.ModelForm  # only rendered read-only: no write-only logic needed
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj=None):
        fields = super().get_fields(request, obj)
        if self._hides_secrets(request, obj):
            return [f for f in fields if f not in self.secret_fields]
        return fields

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        readonly = self._readonly(request, obj)
        return (
            (*readonly, "tenant_column") if self._tenant_shown_readonly(request, obj, readonly) else readonly
        )

    def _readonly(self, request: HttpRequest, obj) -> tuple[str, ...]:
        readonly = tuple(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            readonly += tuple(f for f in self.superuser_fields if f not in readonly)
        return (*readonly, "secrets_masked") if self.secret_fields else readonly

    def get_fieldsets(self, request: HttpRequest, obj=None):
        # A read-only tenant would be labelled by its foreign key's English name ("Tenant"):
        # the labelled column shows it instead.
        fieldsets = super().get_fieldsets(request, obj)
        if not self._tenant_shown_readonly(request, obj, self._readonly(request, obj)):
            return fieldsets
        return [
            (
                name,
                {**options, "fields": ["tenant_column" if f == "tenant" else f for f in options["fields"]]},
            )
            for name, options in fieldsets
        ]

    def _tenant_shown_readonly(self, request: HttpRequest, obj, readonly: tuple[str, ...]) -> bool:
        if self.tenant_path != "tenant" or obj is None:
            return False
        return "tenant" in readonly or not self.has_change_permission(request, obj)

    @admin.display(description=_("秘密情報（伏せ字）"))
    def secrets_masked(self, obj) -> str:
        values = [(obj._meta.get_field(f).verbose_name, getattr(obj, f)) for f in self.secret_fields]
        return format_html_join(mark_safe("<br>"), "{}: {}", ((n, mask(v) if v else "-") for n, v in values))

    # -- permissions: memberships, not Django's per-model permissions -----------------

    def _tenant_of(self, obj) -> int | None:
        return tenant_id_of(obj, self.tenant_path)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser or bool(tenant_roles(request.user))

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(tenant_roles(request.user))
        tenant_id = self._tenant_of(obj)
        return (tenant_id is None and self.shared_without_tenant) or may_see(request.user, tenant_id)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(managed_tenant_ids(request.user))
        return may_act(request.user, self._tenant_of(obj))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return self.has_change_permission(request, obj)

    # -- the audit trail, shown on the object -----------------------------------------

    @admin.display(description=_("管理画面での操作履歴"))
    def audit_trail(self, obj) -> str:
        return audit_trail_html(obj)


class RecordAdmin(TenantScopedAdmin):
    """Rows the admin shows but never writes: audit and attempt rows, the LINE post queue,
    schedules (removed by cancel), recorded problems. Nobody adds or edits one here, and
    only a superuser deletes one, so a manager cannot erase the trail or skip a check.
    Their tables grow by the million: one count a page, estimated when unfiltered
    (console/paginator.py)."""

    paginator = LargeTablePaginator
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser


class ScopedFormSetMixin:
    user = None
    admin: TenantScopedAdmin

    def clean(self) -> None:
        super().clean()
        for form in self.forms:
            if form.has_changed() and not may_act(self.user, self.admin._tenant_of(form.instance)):
                raise ValidationError(
                    _("閲覧のみのテナントの行（%(obj)s）は変更できません。") % {"obj": form.instance}
                )


class ScopedInlineMixin:
    """An inline on a TenantScopedAdmin page follows the page's access: members see it
    (the page itself already answered 404 for another tenant's object)."""

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser or bool(tenant_roles(request.user))


def audit_trail_html(obj: Model, limit: int = 50) -> str:
    # Actions are logged on the concrete model; list edits on a proxy's page under the proxy.
    types = {ContentType.objects.get_for_model(obj, for_concrete_model=c) for c in (True, False)}
    entries = (
        LogEntry.objects.filter(content_type__in=types, object_id=str(obj.pk))
        .select_related("user")
        .order_by("-action_time")[:limit]
    )
    return render_to_string("admin/console/audit_trail.html", {"entries": entries})

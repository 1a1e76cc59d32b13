"""The 承認待ち page for LINE group posts, and the dashboard's records."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin, TenantScopedAdmin
from console.actions import bulk_action, object_action
from console.models import DeliveryOutcome, PushApproval, ScanRun
from console.push_sources import source_html, with_source_task
from console.results import result_label
from console.services import push_item_approve, push_item_reject
from core.access import may_act, may_act_somewhere
from line.models import LineSource
from linepush.models import LinePushItem


def _approve(item, user):
    return push_item_approve(item=item, user=user)


def _reject(item, user):
    return push_item_reject(item=item, user=user)


@admin.register(PushApproval)
class PushApprovalAdmin(TenantScopedAdmin):
    """LINE group posts waiting for a manager: approve (approved_by = you) or reject."""

    list_display = ("created_at", "tenant", "group_name", "trigger_type", "message", "source", "scheduled_at")
    list_display_links = None
    list_filter = ("trigger_type", "tenant")
    search_fields = ("dedupe_key", "ext_group_id", "source_id")
    ordering = ("scheduled_at", "id")
    actions = ["approve_selected", "reject_selected"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        names = LineSource.objects.filter(tenant=OuterRef("tenant"), group_id=OuterRef("ext_group_id"))
        waiting = (
            super()
            .get_queryset(request)
            .filter(status=LinePushItem.Status.WAITING_APPROVAL)
            .select_related("tenant")
            .annotate(_group_name=Subquery(names.values("name")[:1]))
        )
        return with_source_task(waiting)

    def get_list_display(self, request: HttpRequest):
        return [*super().get_list_display(request), self._buttons(request)]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # acting is approve / reject, not editing the post

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/approve/", view(self.approve_view), name="console_pushapproval_approve"),
            path("<path:object_id>/reject/", view(self.reject_view), name="console_pushapproval_reject"),
            *super().get_urls(),
        ]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        """The post's own page (its bubble, group, history): a waiting post is a LINE post."""
        item = self.get_object(request, object_id)
        if item is None:
            raise Http404
        return HttpResponseRedirect(reverse("admin:linepush_linepushitem_change", args=[item.pk]))

    def approve_view(self, request: HttpRequest, object_id: str):
        return object_action(self, request, object_id, _approve, back="changelist")

    def reject_view(self, request: HttpRequest, object_id: str):
        return object_action(self, request, object_id, _reject, back="changelist")

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        if not may_act_somewhere(request.user):
            actions.pop("approve_selected", None)
            actions.pop("reject_selected", None)
        return actions

    @admin.action(description=_("選択した投稿を承認する"))
    def approve_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        bulk_action(self, request, queryset, _approve, done_text=_("%(count)d 件を承認しました。"))

    @admin.action(description=_("選択した投稿を却下する"))
    def reject_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        bulk_action(self, request, queryset, _reject, done_text=_("%(count)d 件を却下しました。"))

    @admin.display(description=_("グループ"), ordering="_group_name")
    def group_name(self, obj: PushApproval) -> str:
        return obj._group_name or obj.ext_group_id

    @admin.display(description=_("発生元（今の状態）"))
    def source(self, obj: PushApproval) -> str:
        return source_html(obj)

    @admin.display(description=_("メッセージ"))
    def message(self, obj: PushApproval) -> str:
        item_url = reverse("admin:linepush_linepushitem_change", args=[obj.pk])
        return render_to_string("admin/console/push_message.html", {"item": obj, "item_url": item_url})

    def _buttons(self, request: HttpRequest):
        @admin.display(description=_("操作"))
        def buttons(obj: PushApproval) -> str:
            if not may_act(request.user, obj.tenant_id):
                return format_html("<span class='quiet'>{}</span>", _("閲覧のみ"))
            return render_to_string("admin/console/push_buttons.html", {"item": obj})

        return buttons


@admin.register(DeliveryOutcome)
class DeliveryOutcomeAdmin(RecordAdmin):
    list_display = ("created_at", "tenant", "task", "kind", "detail_label")
    list_filter = ("kind", "tenant")
    search_fields = ("task__issue_key",)
    date_hierarchy = "created_at"

    @admin.display(description=_("詳細"))
    def detail_label(self, obj: DeliveryOutcome) -> str:
        return result_label(obj.detail)


@admin.register(ScanRun)
class ScanRunAdmin(admin.ModelAdmin):
    """Every tenant's figures: superusers only (the dashboard shows managers their own)."""

    list_display = ("created_at", "dry_run", "leaks", "rescued", "errors")
    readonly_fields = ("created_at", "dry_run", "totals", "results")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description=_("取りこぼし"))
    def leaks(self, obj: ScanRun) -> int:
        return obj.totals.get("leaks", 0)

    @admin.display(description=_("救済"))
    def rescued(self, obj: ScanRun) -> int:
        return obj.totals.get("rescued", 0)

    @admin.display(description=_("エラー"))
    def errors(self, obj: ScanRun) -> int:
        return obj.totals.get("errors", 0)

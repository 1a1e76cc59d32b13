"""配信予約 and メッセージテンプレート: read-only records. A manager reads what goes out and
when; the machinery (a schedule's name, lease and claim, its stored results, a template's
message objects) is shown to superusers only."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin, TenantScopedAdmin
from console.filters import ChannelFilter
from console.preview import bubble
from core.channels import channel_label
from deliveries.models import DeliverySchedule, MessageTemplate

# What a manager reads of a schedule: the task, when, why, and how its tries went.
SCHEDULE_FIELDS = ("task_link", "due_at", "reason", "stage", "attempts", "last_error", "created_at")


@admin.register(DeliverySchedule)
class DeliveryScheduleAdmin(RecordAdmin):
    """Schedules come from approvals; a manager removes one only with 取消 (cancel), which checks
    the stage and moves the Backlog status back: deleting the row here would skip both."""

    list_display = ("task_link", "due_at", "reason", "attempts", "last_error")
    list_filter = ("tenant", "reason")
    search_fields = ("name", "task__issue_key", "task__summary")
    list_select_related = ("task",)

    def get_list_display(self, request: HttpRequest):
        shown = super().get_list_display(request)
        return ("name", *shown, "lease_until") if request.user.is_superuser else shown

    def get_fields(self, request: HttpRequest, obj=None):
        if request.user.is_superuser:
            return ["task_link", *(f.name for f in DeliverySchedule._meta.fields if f.name != "task")]
        return list(SCHEDULE_FIELDS)

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description=_("タスク"), ordering="task__issue_key")
    def task_link(self, obj: DeliverySchedule) -> str:
        url = reverse("admin:deliveries_contenttask_change", args=[obj.task_id])
        return format_html('<a href="{}">{} {}</a>', url, obj.task.issue_key, obj.task.summary)


@admin.register(MessageTemplate)
class MessageTemplateAdmin(TenantScopedAdmin):
    """Revisions are immutable: import them with `manage.py import_templates DIR`."""

    shared_without_tenant = True  # shared templates (no tenant) are visible to every manager

    list_display = ("name", "rev", "tenant_label", "channel_label", "created_at")
    list_filter = ("tenant", ChannelFilter)
    search_fields = ("name", "rev")

    def get_fields(self, request: HttpRequest, obj=None):
        shown = ["name", "rev", "tenant_label", "channel_label", "messages_bubbles", "created_at"]
        return [*shown, "messages"] if request.user.is_superuser else shown

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return self.get_fields(request, obj)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=_("テナント"), ordering="tenant")
    def tenant_label(self, obj: MessageTemplate) -> str:
        return str(obj.tenant) if obj.tenant_id else gettext("全テナント共通")

    @admin.display(description=_("チャネル"), ordering="channel")
    def channel_label(self, obj: MessageTemplate) -> str:
        return channel_label(obj.channel)

    @admin.display(description=_("メッセージ（LINE での表示）"))
    def messages_bubbles(self, obj: MessageTemplate) -> str:
        messages = obj.messages if isinstance(obj.messages, list) else []
        hosts = obj.tenant.image_hosts() if obj.tenant_id else frozenset()
        context = {
            "bubbles": [bubble(m, hosts) for m in messages if isinstance(m, dict)],
            "name": "",
            "time": None,
        }
        return render_to_string("admin/console/push_bubbles.html", context | {"group": obj.name})

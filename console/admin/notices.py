"""A tenant's テスト配信 宛先 and 要対応の通知 settings, and the テスト配信 button's view
(`TestSendMixin`, on the task's preview and a group post's page)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import path

from console.access import RecordAdmin, TenantScopedAdmin
from console.actions import object_action
from console.models import AttentionNotice, LineTestRecipient, NoticeSettings
from console.services import ActionResult
from console.test_sends import push_item_test_send, task_test_send
from core.access import may_act
from deliveries.models import ContentTask
from linepush.models import LinePushItem


@admin.register(LineTestRecipient)
class LineTestRecipientAdmin(TenantScopedAdmin):
    list_display = ("name", "user_id", "tenant", "active")
    list_editable = ("active",)
    list_filter = ("tenant", "active")
    search_fields = ("name", "user_id")


@admin.register(NoticeSettings)
class NoticeSettingsAdmin(TenantScopedAdmin):
    list_display = ("tenant", "enabled", "via", "line_to")
    list_editable = ("enabled",)


@admin.register(AttentionNotice)
class AttentionNoticeAdmin(RecordAdmin):
    list_display = ("created_at", "tenant", "text", "sent_at", "sent_to")
    list_filter = ("tenant",)
    fields = ("tenant", "text", "created_at", "sent_at", "sent_to")
    readonly_fields = fields


# What テスト配信 sends of each kind of object, and the page it comes back to.
TEST_SENDS: dict[type, tuple[Callable[..., ActionResult], str]] = {
    ContentTask: (lambda task, user: task_test_send(task=task, user=user), "preview"),
    LinePushItem: (lambda item, user: push_item_test_send(item=item, user=user), "change"),
}


class TestSendMixin:
    """`<id>/test_send/` (POST, managers of the object's tenant): the object's message to the
    tenant's test recipients (TEST_SENDS); the result comes back as a message."""

    def get_urls(self):
        opts = self.model._meta
        view = self.admin_site.admin_view(self.test_send_view)
        name = f"{opts.app_label}_{opts.model_name}_test_send"
        return [path("<path:object_id>/test_send/", view, name=name), *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        obj = self.get_object(request, object_id)
        extra = {"can_test_send": may_act(request.user, obj.tenant_id), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

    def test_send_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        service, back = TEST_SENDS[self.model]
        return object_action(self, request, object_id, service, back=back)

"""The admin of the group-post queue and its trigger policies (the LINE account's settings,
plans and usage: line.py; its groups, contacts and events: line_account.py)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin, ScopedInlineMixin, TenantScopedAdmin
from console.actions import bulk_action, object_action
from console.admin.notices import TestSendMixin
from console.bulk import PUSH_DISMISS, PUSH_RETRY, confirm_action
from console.line_errors import line_error_explain
from console.preview import bubble
from console.push_sources import source_html, with_source_task
from console.services import push_item_approve, push_item_reject, push_item_resume, push_item_retry
from core.access import may_act, may_act_somewhere
from line.models import LineSource
from linepush.models import LinePushAttempt, LinePushItem, LinePushProblem, LineTriggerPolicy
from linepush.producers import DIGEST_SOURCE_TABLE, SOURCE_TABLE


def _approve(item, user):
    return push_item_approve(item=item, user=user)


def _reject(item, user):
    return push_item_reject(item=item, user=user)


def _retry(item, user):
    return push_item_retry(item=item, user=user)


def _resume(item, user):
    return push_item_resume(item=item, user=user)


class AttemptInline(ScopedInlineMixin, admin.TabularInline):
    """Each request of the post: when, how it ended and LINE's answer in Japanese; the request
    id, LINE's own words and the retry key for superusers."""

    model = LinePushAttempt
    extra = 0
    can_delete = False
    MACHINERY = ("status_code", "request_id", "error", "duration_ms", "retry_key")

    def get_fields(self, request: HttpRequest, obj=None):
        fields = ["created_at", "outcome", "error_text"]
        return [*fields, *self.MACHINERY] if request.user.is_superuser else fields

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description=_("LINE の応答"))
    def error_text(self, obj: LinePushAttempt) -> str:
        return line_error_explain(obj.error, obj.status_code) if obj.error else "-"


@admin.register(LinePushItem)
class LinePushItemAdmin(TestSendMixin, RecordAdmin):
    """A post as the group will see it: the bubble, the group and trigger by name, LINE's answer
    in Japanese. The queue's machinery (dedupe key, claim, lease, retry key, the JSON sent) is
    for superusers."""

    list_display = (
        "message",
        "group_name",
        "origin_shown",
        "tenant",
        "trigger_type",
        "status",
        "attempt_count",
        "error_text",
        "scheduled_at",
        "sent_at",
    )
    list_display_links = None  # the message links to the post
    list_filter = ("status", "trigger_type", "origin", "tenant")
    list_select_related = ("tenant", "api_token")
    search_fields = ("dedupe_key", "ext_group_id", "source_id")
    POST = (
        "message_bubbles",
        "group_name",
        "trigger_type",
        "origin_shown",
        "status",
        "scheduled_at",
        "sent_at",
        "attempt_count",
        "error_text",
        "approved_by",
        "approved_at",
        "rejected_by",
        "source_label",
        "audit_trail",
    )
    MACHINERY = (
        "tenant_column",
        "ext_group_id",
        "dedupe_key",
        "retry_key",
        "payload_json",
        "last_error",
        "request_id",
        "source_table",
        "source_id",
        "lease_until",
        "claimed_by",
        "reserved_at",
        "reserved_cost",
        "first_attempt_at",
    )
    inlines = [AttemptInline]
    actions = ["approve", "reject", "retry", "dismiss", "resume_held"]
    change_form_template = "admin/linepush/linepushitem/change_form.html"

    # The queue is read-only here (RecordAdmin): items come from the producers and the API
    # (which check the approval rule, the payload and the dedupe key); a person acts on an
    # item only through approve / reject / retry / resume, and only a superuser deletes one,
    # since its attempts (the audit log) would go with it.

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        names = LineSource.objects.filter(tenant=OuterRef("tenant"), group_id=OuterRef("ext_group_id"))
        items = super().get_queryset(request).annotate(_group_name=Subquery(names.values("name")[:1]))
        return with_source_task(items)

    def get_list_display(self, request: HttpRequest):
        shown = super().get_list_display(request)
        return ["dedupe_key", *shown] if request.user.is_superuser else shown

    def get_fieldsets(self, request: HttpRequest, obj=None):
        fieldsets = [(None, {"fields": self.POST})]
        if request.user.is_superuser:
            machinery = (
                _("仕組み（スーパーユーザーのみ）"),
                {"fields": self.MACHINERY, "classes": ("collapse",)},
            )
            fieldsets.append(machinery)
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [f for _name, options in self.get_fieldsets(request, obj) for f in options["fields"]]

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        if not may_act_somewhere(request.user):
            return {}
        return actions

    @admin.display(description=_("発生元"), ordering="origin")
    def origin_shown(self, obj: LinePushItem) -> str:
        return obj.origin_label

    def get_urls(self):
        view = self.admin_site.admin_view
        retry = path("<path:object_id>/retry/", view(self.retry_view), name="linepush_linepushitem_retry")
        return [retry, *super().get_urls()]

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return object_action(self, request, object_id, _retry)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        item = self.get_object(request, object_id)
        failed = item.status == LinePushItem.Status.FAILED and may_act(request.user, item.tenant_id)
        context = {"can_retry": failed, **(extra_context or {})}
        return super().change_view(request, object_id, form_url, context)

    @admin.action(description=_("選択した投稿を承認する"))
    def approve(self, request, queryset: QuerySet[LinePushItem]) -> None:
        bulk_action(self, request, queryset, _approve, done_text=_("%(count)d 件を承認しました。"))

    @admin.action(description=_("選択した投稿を却下する"))
    def reject(self, request, queryset: QuerySet[LinePushItem]) -> None:
        bulk_action(self, request, queryset, _reject, done_text=_("%(count)d 件を却下しました。"))

    retry = confirm_action(
        PUSH_RETRY,
        description=_("選択した失敗投稿を再実行する（確認あり）"),
        title=_("選択した失敗投稿を再実行"),
        done=_("%(count)d 件を送信待ちに戻しました。"),
    )
    dismiss = confirm_action(
        PUSH_DISMISS,
        description=_("選択した失敗投稿を取り消す（確認あり）"),
        title=_("選択した失敗投稿を取り消す"),
        done=_("%(count)d 件の失敗投稿を取り消しました。"),
    )

    @admin.action(description=_("選択した保留中の投稿を再開する"))
    def resume_held(self, request, queryset: QuerySet[LinePushItem]) -> None:
        bulk_action(self, request, queryset, _resume, done_text=_("%(count)d 件を送信待ちに戻しました。"))

    @admin.display(description=_("メッセージ"))
    def message(self, obj: LinePushItem) -> str:
        item_url = reverse("admin:linepush_linepushitem_change", args=[obj.pk])
        return render_to_string("admin/console/push_message.html", {"item": obj, "item_url": item_url})

    @admin.display(description=_("メッセージ（LINE での表示）"))
    def message_bubbles(self, obj: LinePushItem) -> str:
        context = {
            "bubbles": [bubble(m, obj.tenant.image_hosts()) for m in obj.payload if isinstance(m, dict)],
            "name": obj.tenant.name,
            "time": obj.sent_at or obj.scheduled_at,
            "group": self.group_name(obj),
        }
        return render_to_string("admin/console/push_bubbles.html", context)

    @admin.display(description=_("投稿先グループ"), ordering="_group_name")
    def group_name(self, obj: LinePushItem) -> str:
        name = getattr(obj, "_group_name", None)
        return name or gettext("未登録のグループ（ボットが参加していないか、名前がまだ読めていません）")

    @admin.display(description=_("エラー"))
    def error_text(self, obj: LinePushItem) -> str:
        return line_error_explain(obj.last_error) if obj.last_error else "-"

    @admin.display(description=_("課題（今の状態）"))
    def source_label(self, obj: LinePushItem) -> str:
        return source_html(obj)

    @admin.display(description=_("送信する JSON"))
    def payload_json(self, obj: LinePushItem) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.payload, ensure_ascii=False, indent=2))


@admin.register(LineTriggerPolicy)
class LineTriggerPolicyAdmin(TenantScopedAdmin):
    list_display = ("tenant", "trigger_type", "requires_approval")
    list_filter = ("tenant",)


@admin.register(LinePushProblem)
class LinePushProblemAdmin(RecordAdmin):
    """Posts a producer could not queue (the others went on); a row goes away once queued."""

    list_display = ("last_seen_at", "tenant", "trigger_type", "source_label", "error", "occurrences")
    list_filter = ("trigger_type", "tenant")
    search_fields = ("source_id",)
    readonly_fields = [f.name for f in LinePushProblem._meta.fields]
    # The producer's table names are machinery: a manager reads what the post was about.
    SOURCES = {SOURCE_TABLE: _("課題 %(id)s"), DIGEST_SOURCE_TABLE: _("LINE グループ %(id)s")}

    def get_fields(self, request: HttpRequest, obj=None):
        fields = super().get_fields(request, obj)
        if request.user.is_superuser:
            return fields
        return ["source_label" if f == "source_table" else f for f in fields if f != "source_id"]

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [*super().get_readonly_fields(request, obj), "source_label"]

    @admin.display(description=_("発生元"), ordering="source_id")
    def source_label(self, obj: LinePushProblem) -> str:
        text = self.SOURCES.get(obj.source_table)
        return text % {"id": obj.source_id} if text else f"{obj.source_table}:{obj.source_id}"

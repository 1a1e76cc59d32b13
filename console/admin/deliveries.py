"""The managers' admin for content tasks, schedules and templates (scoped to the user's
tenants; channel accounts and posts: console/admin/channels.py).

Content tasks: a list with the Backlog link, times in JST, status and the last
attempt; a detail page with the parsed fields, schedule, every attempt, the
write-back and the audit trail; actions approve / preview / cancel / retry.
"""

from __future__ import annotations

import csv
from datetime import datetime

from django import forms
from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from backlog_bridge.models import AIReview, CommandRun
from console.access import ScopedInlineMixin, TenantScopedAdmin
from console.actions import object_action
from console.admin.notices import TestSendMixin
from console.bulk import CANCEL, RETRY, bulk_confirm
from console.filters import ChannelFilter, PublishDateFilter
from console.preview import preview_page
from console.services import ACTION_ERRORS, task_approve, task_cancel, task_correct, task_retry
from core.access import may_act, require_act
from core.timeutil import JST, fmt_jst, iso_jst
from deliveries.channels.corrections import corrects
from deliveries.models import (
    STATUS_APPROVED,
    STATUS_DELIVERED,
    STATUS_ERROR,
    ContentTask,
    DeliveryAttempt,
    DeliverySchedule,
)


class AttemptInline(ScopedInlineMixin, admin.TabularInline):
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
        "correction",
    )
    readonly_fields = fields
    verbose_name_plural = _("配信試行（LINE への各リクエスト）")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def _approve(task, user):
    return task_approve(task=task, user=user)


def _retry(task, user):
    return task_retry(task=task, user=user)


def _cancel(task, user):
    return task_cancel(task=task, user=user)


class CorrectionForm(forms.Form):
    text = forms.CharField(
        label=_("訂正文"),
        max_length=5000,  # LINE's limit of a text message
        widget=forms.Textarea(attrs={"rows": 6, "cols": 60}),
        help_text=_("元の配信と同じ宛先に送ります。グループや個人への送信は元のメッセージを引用します。"),
    )


STATUS_STYLES = {STATUS_APPROVED: "approved", STATUS_DELIVERED: "delivered", STATUS_ERROR: "error"}
EXPORT_COLUMNS = ("tenant", "issue_key", "summary", "channel", "publish_at", "due_at", "status", "delivered")


@admin.register(ContentTask)
class ContentTaskAdmin(TestSendMixin, TenantScopedAdmin):
    list_display = (
        "issue_link",
        "summary",
        "channel_label",
        "publish_short",
        "due_at",
        "status",
        "last_attempt",
        "tenant_slug",
    )
    list_display_links = ("summary",)
    list_filter = ("status_name", ChannelFilter, "tenant", PublishDateFilter)
    search_fields = ("issue_key", "summary")
    list_select_related = ("tenant",)
    actions = ["export_csv", RETRY, CANCEL]
    inlines = [AttemptInline]
    change_form_template = "admin/deliveries/contenttask/change_form.html"
    fieldsets = (
        (
            _("課題"),
            {
                "fields": (
                    "tenant_slug",
                    "issue_link",
                    "summary",
                    "status",
                    "channel_label",
                    "publish_at",
                    "template_ref",
                    "approved_at",
                    "approval_seq",
                    "delivered_at",
                    "last_synced_at",
                    "deleted_at",
                )
            },
        ),
        (_("解析結果"), {"fields": ("parsed_fields", "parse_problems")}),
        (_("配信予約"), {"fields": ("schedule_panel", "approval_checks_panel")}),
        (_("Backlog への書き戻し"), {"fields": ("writeback_panel",)}),
        (_("AI レビュー"), {"fields": ("ai_reviews",)}),
        (_("操作の記録"), {"fields": ("audit_trail", "command_runs")}),
        (_("本文"), {"fields": ("description",), "classes": ("collapse",)}),
    )

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        last = DeliveryAttempt.objects.filter(task=OuterRef("pk")).order_by("-created_at", "-id")
        return (
            super()
            .get_queryset(request)
            .annotate(
                _due_at=Subquery(DeliverySchedule.objects.filter(task=OuterRef("pk")).values("due_at")[:1]),
                _last_outcome=Subquery(last.values("outcome")[:1]),
                _last_status_code=Subquery(last.values("status_code")[:1]),
            )
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tasks come from Backlog

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    # -- actions ---------------------------------------------------------------------

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/approve/", view(self.approve_view), name="deliveries_contenttask_approve"),
            path("<path:object_id>/retry/", view(self.retry_view), name="deliveries_contenttask_retry"),
            path("<path:object_id>/cancel/", view(self.cancel_view), name="deliveries_contenttask_cancel"),
            path("<path:object_id>/preview/", view(self.preview_view), name="deliveries_contenttask_preview"),
            path("<path:object_id>/correct/", view(self.correct_view), name="deliveries_contenttask_correct"),
            *super().get_urls(),
        ]

    def approve_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return object_action(self, request, object_id, _approve)

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return object_action(self, request, object_id, _retry)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return object_action(self, request, object_id, _cancel)

    def preview_view(self, request: HttpRequest, object_id: str) -> TemplateResponse:
        task = self.get_object(request, object_id)
        context = {**self.admin_site.each_context(request), **preview_page(task=task, user=request.user)}
        return TemplateResponse(request, "admin/deliveries/contenttask/preview.html", context)

    def correct_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """訂正を送る: a small form; the correction goes out on a valid POST (managers only)."""
        task = self.get_object(request, object_id)
        require_act(request.user, task.tenant_id)
        form = CorrectionForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            try:
                result = task_correct(task=task, user=request.user, text=form.cleaned_data["text"])
            except ACTION_ERRORS as exc:
                form.add_error(None, str(exc))
            else:
                self.message_user(request, result.message, messages.SUCCESS if result.ok else messages.ERROR)
                if result.ok:
                    return HttpResponseRedirect(
                        reverse("admin:deliveries_contenttask_change", args=[task.pk])
                    )
        context = {**self.admin_site.each_context(request), "opts": self.opts, "task": task, "form": form}
        return TemplateResponse(request, "admin/deliveries/contenttask/correct.html", context)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        task = self.get_object(request, object_id)
        context = {
            "task_actions": _available(task, request.user),
            # every field mirrors Backlog: nothing to save here
            "show_save": False,
            "show_save_and_continue": False,
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)

    @admin.action(description=_("選択した課題を CSV で出力"))
    def export_csv(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="automedia-tasks.csv"'
        response.write("\ufeff")  # Excel reads UTF-8 only with a BOM
        writer = csv.writer(response)
        writer.writerow(EXPORT_COLUMNS)
        for task in queryset:
            writer.writerow(_export_row(task))
        return response

    @admin.action(description=_("選択した課題を再試行する（確認あり）"))
    def retry_selected(self, request: HttpRequest, queryset: QuerySet):
        title = _("選択した課題を再試行")
        return bulk_confirm(
            self, request, queryset, action=RETRY, title=title, done=_("%(count)d 件を再試行しました。")
        )

    @admin.action(description=_("選択した課題の予約を取り消す（確認あり）"))
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet):
        title = _("選択した課題の予約を取り消す")
        return bulk_confirm(
            self,
            request,
            queryset,
            action=CANCEL,
            title=title,
            done=_("%(count)d 件の予約を取り消しました。"),
        )

    # -- columns and panels -------------------------------------------------------------

    @admin.display(description=_("課題キー"), ordering="issue_key")
    def issue_link(self, obj: ContentTask) -> str:
        url = f"{obj.tenant.backlog_base_url.rstrip('/')}/view/{obj.issue_key}"
        return format_html('<a href="{}" target="_blank" rel="noopener">{} ↗</a>', url, obj.issue_key)

    @admin.display(description=_("テナント"), ordering="tenant__slug")
    def tenant_slug(self, obj: ContentTask) -> str:
        return obj.tenant.slug

    @admin.display(description=_("チャネル"), ordering="channel")
    def channel_label(self, obj: ContentTask) -> str:
        return obj.channel_label

    @admin.display(description=_("配信予定（JST）"), ordering="_due_at")
    def due_at(self, obj: ContentTask):
        return short_jst(getattr(obj, "_due_at", None))

    @admin.display(description=_("投稿日時"), ordering="publish_at")
    def publish_short(self, obj: ContentTask) -> str:
        return short_jst(obj.publish_at)

    @admin.display(description=_("状態"), ordering="status_name")
    def status(self, obj: ContentTask) -> str:
        style = STATUS_STYLES.get(obj.status_name, "other")
        return format_html('<span class="am-status am-status-{}">{}</span>', style, obj.status_name or "-")

    @admin.display(description=_("最後の試行"))
    def last_attempt(self, obj: ContentTask) -> str:
        outcome = getattr(obj, "_last_outcome", None)
        if not outcome:
            return "-"
        label = DeliveryAttempt.Outcome(outcome).label
        code = getattr(obj, "_last_status_code", None)
        text = f"{label} ({code})" if code else label
        return format_html('<span class="am-outcome am-outcome-{}">{}</span>', outcome, text)

    @admin.display(description=_("解析した項目"))
    def parsed_fields(self, obj: ContentTask) -> str:
        return render_to_string(
            "admin/deliveries/contenttask/parsed.html", {"parsed": obj.parsed, "task": obj}
        )

    @admin.display(description=_("解析エラー"))
    def parse_problems(self, obj: ContentTask) -> str:
        return render_to_string("admin/deliveries/contenttask/problems.html", {"problems": obj.parse_errors})

    @admin.display(description=_("予約"))
    def schedule_panel(self, obj: ContentTask) -> str:
        return render_to_string("admin/deliveries/contenttask/schedule.html", {"schedule": _schedule_of(obj)})

    @admin.display(description=_("承認時の確認"))
    def approval_checks_panel(self, obj: ContentTask) -> str:
        """LINE validate, the quota forecast, platform rules: as the last approval checked them."""
        checks = obj.approval_checks or {}
        when = checks.get("checked_at")
        return render_to_string(
            "admin/deliveries/contenttask/checks.html",
            {"checks": checks, "checked_at": fmt_jst(datetime.fromisoformat(when)) if when else ""},
        )

    @admin.display(description=_("書き戻し"))
    def writeback_panel(self, obj: ContentTask) -> str:
        context = {"task": obj, "schedule": _schedule_of(obj)}
        return render_to_string("admin/deliveries/contenttask/writeback.html", context)

    @admin.display(description=_("AI レビュー"))
    def ai_reviews(self, obj: ContentTask) -> str:
        reviews = AIReview.objects.filter(tenant=obj.tenant, issue_key=obj.issue_key)[:5]
        return render_to_string("admin/deliveries/contenttask/ai_reviews.html", {"reviews": reviews})

    @admin.display(description=_("コメントコマンド"))
    def command_runs(self, obj: ContentTask) -> str:
        runs = CommandRun.objects.filter(tenant=obj.tenant, issue_key=obj.issue_key).order_by("-created_at")
        return render_to_string("admin/deliveries/contenttask/command_runs.html", {"runs": runs[:20]})


def _schedule_of(task: ContentTask) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task=task).first()


def _available(task: ContentTask, user) -> dict[str, bool]:
    """Which action buttons the detail page shows (the services check again)."""
    schedule = _schedule_of(task)
    acting = may_act(user, task.tenant_id) and task.deleted_at is None
    open_task = acting and schedule is None and task.delivered_at is None
    return {
        "act": acting,
        "approve": open_task and task.status_name != STATUS_ERROR,
        "retry": open_task and task.status_name == STATUS_ERROR,
        "cancel": acting and schedule is not None and schedule.stage == DeliverySchedule.Stage.DELIVER,
        "correct": acting and task.delivered_at is not None and corrects(task.channel),
    }


def short_jst(when) -> str:
    """`12/10 10:00` (JST; the year too when it is not this year's): the list's narrow columns."""
    if when is None:
        return "-"
    local, this_year = when.astimezone(JST), timezone.now().astimezone(JST).year
    return f"{local:%-m/%-d %H:%M}" if local.year == this_year else f"{local:%Y/%-m/%-d %H:%M}"


def _jst(when) -> str:
    return iso_jst(when) if when else ""


def _export_row(task: ContentTask) -> list[str]:
    times = [_jst(task.publish_at), _jst(task._due_at), task.status_name, _jst(task.delivered_at)]
    return [_cell(text) for text in (task.tenant.slug, task.issue_key, task.summary, task.channel, *times)]


# What a spreadsheet reads as the start of a formula, a leading tab or carriage return
# included (https://owasp.org/www-community/attacks/CSV_Injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(text: str) -> str:
    """A cell that a spreadsheet would run as a formula is exported as text (CSV injection)."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text

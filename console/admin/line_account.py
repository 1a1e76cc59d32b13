"""The admin of what lives on the tenant's LINE account: its groups, contacts (and their
erasure on request), survey rules and the webhook events LINE sent."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin, TenantScopedAdmin
from console.admin.stored_events import StoredEventAdmin
from line.erasure import line_user_erase
from line.events import HANDLERS
from line.models import LineContact, LineErasure, LineSource, LineSurveyRule, LineWebhookEvent, Trigger


@admin.register(LineContact)
class LineContactAdmin(TenantScopedAdmin):
    list_display = ("user_id", "display_name", "tenant", "blocked", "wants_next_delivery")
    list_filter = ("tenant", "blocked", "wants_next_delivery")
    search_fields = ("user_id", "display_name")
    readonly_fields = ("blocked_at",)
    actions = ["erase_personal_data"]

    def get_actions(self, request: HttpRequest):
        # An erasure cannot be undone and reaches every stored event: superusers only.
        actions = super().get_actions(request)
        if not request.user.is_superuser:
            actions.pop("erase_personal_data", None)
        return actions

    @admin.action(description=_("LINE ユーザーのデータを消去する（本人の依頼）"))
    def erase_personal_data(self, request, queryset: QuerySet[LineContact]) -> HttpResponse | None:
        if not request.user.is_superuser:
            raise PermissionDenied
        contacts = list(queryset[:2])
        if len(contacts) != 1:
            self.message_user(request, _("消去するユーザーを 1 人だけ選んでください。"), messages.ERROR)
            return None
        if request.POST.get("confirmed") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "contact": contacts[0],
            }
            return TemplateResponse(request, "admin/line/linecontact/erase_confirmation.html", context)
        erasure = line_user_erase(contact=contacts[0], by=request.user)
        done = _(
            "LINE ユーザーのデータを消去しました（受信イベント %(events)d 件、配信試行 %(attempts)d 件からID を削除）。"
        )
        self.message_user(
            request, done % {"events": erasure.events, "attempts": erasure.attempts}, messages.SUCCESS
        )
        return None


@admin.register(LineErasure)
class LineErasureAdmin(RecordAdmin):
    """Erasures on request: who and when (whose is not kept)."""

    list_display = ("erased_at", "tenant", "erased_by_name", "events", "attempts")
    list_filter = ("tenant",)


class LineSourceForm(forms.ModelForm):
    """The per-group toggles, editable in the list: outbound pushes and the opted-in triggers."""

    push_opt_in_triggers = forms.MultipleChoiceField(
        label=LineSource._meta.get_field("push_opt_in_triggers").verbose_name,
        choices=Trigger.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )

    class Meta:
        model = LineSource
        fields = (
            "tenant",
            "group_id",
            "kind",
            "name",
            "allow_outbound_push",
            "push_opt_in_triggers",
            "rate_limit_count",
            "rate_limit_window_seconds",
            "joined_at",
            "left_at",
        )


@admin.register(LineSource)
class LineSourceAdmin(TenantScopedAdmin):
    list_display = (
        "name",
        "group_id_short",
        "tenant",
        "member_count",
        "allow_outbound_push",
        "push_opt_in_triggers",
        "left_at",
    )
    list_editable = ("allow_outbound_push", "push_opt_in_triggers")
    list_filter = ("tenant", "allow_outbound_push", "kind")
    search_fields = ("name", "group_id")
    # The member count is LINE's (members/count, join and leave events) and is what the quota
    # hold counts per push: nobody types it in.
    readonly_fields = ("member_count", "audit_trail")
    form = LineSourceForm

    # Rows come from LINE's join events. A row's id (and tenant) never changes, and only a
    # superuser adds or deletes one: a row deleted and added again, or moved onto another
    # group's id, would make a big group's pushes count as a small one's.
    # (Extended where the base works out its read-only fields, so the tenant is shown by
    # its labelled column as on every other page.)
    def _readonly(self, request: HttpRequest, obj) -> tuple[str, ...]:
        fixed = ("tenant", "group_id", "kind") if obj is not None else ()
        return (*super()._readonly(request, obj), *fixed)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser and super().has_add_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser and super().has_delete_permission(request, obj)

    def get_changelist_form(self, request: HttpRequest, **kwargs):
        return super().get_changelist_form(request, form=LineSourceForm, **kwargs)

    @admin.display(description=_("グループID"), ordering="group_id")
    def group_id_short(self, obj: LineSource) -> str:
        # A manager tells groups apart by name; the 32-character id is there to match
        # LINE's, whole in the tooltip and on the group's page.
        shown = obj.group_id if len(obj.group_id) <= 12 else f"{obj.group_id[:6]}…{obj.group_id[-4:]}"
        return format_html('<span class="am-id" title="{}">{}</span>', obj.group_id, shown)


# What each event LINE sends means, as a manager says it (the types: webhook.yml, `Event`).
LINE_EVENT_LABELS = {
    "follow": _("友だち追加"),
    "unfollow": _("ブロック"),
    "message": _("メッセージ"),
    "messageEdited": _("メッセージの編集"),
    "join": _("グループへの参加"),
    "leave": _("グループからの退出"),
    "memberJoined": _("メンバーの参加"),
    "memberLeft": _("メンバーの退出"),
}


@admin.register(LineWebhookEvent)
class LineWebhookEventAdmin(StoredEventAdmin):
    list_display = ("event_id", "tenant", "type_label", *StoredEventAdmin.ENDED)
    list_filter = StoredEventAdmin.filters(LineWebhookEvent, HANDLERS, labels=LINE_EVENT_LABELS)
    readonly_fields = ("tenant", "event_id", "type_label", *StoredEventAdmin.RECORD)
    exclude = (*StoredEventAdmin.exclude, "webhook_event_id")

    @admin.display(description=_("イベントID"), ordering="webhook_event_id")
    def event_id(self, obj: LineWebhookEvent) -> str:
        return obj.webhook_event_id

    @admin.display(description=_("種別"), ordering="type")
    def type_label(self, obj: LineWebhookEvent) -> str:
        return str(LINE_EVENT_LABELS.get(obj.type, obj.type))


class LineSurveyRuleForm(forms.ModelForm):
    class Meta:
        model = LineSurveyRule
        fields = (
            "tenant",
            "name",
            "match",
            "pattern",
            "add_tags",
            "remove_tags",
            "next_delivery",
            "priority",
            "is_active",
        )
        # In the form, not on the model field: a help text there would need a migration.
        help_texts = {
            "pattern": _(
                "正規表現は RE2 の構文です（後方参照や先読み・後読みは使えません）。"
                "\\d と \\w は半角英数字だけに一致します。全角数字も含めるなら \\p{Nd} と書いてください。"
            )
        }


@admin.register(LineSurveyRule)
class LineSurveyRuleAdmin(TenantScopedAdmin):
    form = LineSurveyRuleForm
    list_display = ("name", "tenant", "match", "pattern", "next_delivery", "priority", "is_active")
    list_filter = ("tenant", "is_active")

"""Backlog events, comment commands and AI reviews (records: read-only, scoped to the user's tenants)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from backlog_bridge.models import (
    HANDLED_TYPES,
    TYPE_BULK_UPDATED,
    TYPE_COMMENTED,
    TYPE_CREATED,
    TYPE_DATES_UPDATED,
    TYPE_DELETED,
    TYPE_UPDATED,
    AIReview,
    BacklogEvent,
    CommandRun,
)
from console.access import RecordAdmin
from console.admin.stored_events import StoredEventAdmin
from console.filters import fixed_values_filter
from console.results import result_label
from deliveries.comment_commands.parse import VERBS

# What each Backlog activity type means (https://developer.nulab.com/docs/backlog/api/2/get-recent-updates/).
BACKLOG_TYPE_LABELS = {
    TYPE_CREATED: _("課題の追加"),
    TYPE_UPDATED: _("課題の更新"),
    TYPE_COMMENTED: _("コメント"),
    TYPE_DELETED: _("課題の削除"),
    TYPE_BULK_UPDATED: _("課題の一括更新"),
    TYPE_DATES_UPDATED: _("課題の日付の一括更新"),
}
# The commands as managers write them in Backlog.
BY_COMMAND = fixed_values_filter("verb", _("コマンド"), sorted(VERBS), {v: f"/automedia {v}" for v in VERBS})
BY_SOURCE = fixed_values_filter(
    "source", _("受け取り方"), list(BacklogEvent.Source.values), dict(BacklogEvent.Source.choices)
)


@admin.register(BacklogEvent)
class BacklogEventAdmin(StoredEventAdmin):
    list_display = ("activity_id", "tenant", "type_label", "issue_key", *StoredEventAdmin.ENDED)
    list_filter = StoredEventAdmin.filters(BacklogEvent, HANDLED_TYPES, BY_SOURCE, labels=BACKLOG_TYPE_LABELS)
    search_fields = ("issue_key", "activity_id")
    readonly_fields = (
        "tenant",
        "activity_id",
        "type_label",
        "issue_key",
        "source_label",
        *StoredEventAdmin.RECORD,
    )
    exclude = (*StoredEventAdmin.exclude, "source")

    @admin.display(description=_("受け取り方"))
    def source_label(self, obj: BacklogEvent) -> str:
        return obj.get_source_display()

    @admin.display(description=_("種別"), ordering="type")
    def type_label(self, obj: BacklogEvent) -> str:
        return str(BACKLOG_TYPE_LABELS.get(obj.type, obj.type))


@admin.register(CommandRun)
class CommandRunAdmin(RecordAdmin):
    """A comment command as the manager wrote it in Backlog, who wrote it and how it ended;
    its parsed arguments and the commenter as Backlog sent them are for superusers."""

    list_display = ("created_at", "tenant", "issue_key", "command", "result_label")
    list_filter = (BY_COMMAND, "tenant")
    search_fields = ("issue_key",)

    def get_fields(self, request: HttpRequest, obj=None):
        shown = ["tenant", "issue_key", "command", "by", "result_label", "created_at"]
        return [*shown, "comment_id", "args", "user", "result"] if request.user.is_superuser else shown

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description=_("コマンド"), ordering="verb")
    def command(self, obj: CommandRun) -> str:
        args = " ".join(f"{k}={v}" for k, v in (obj.args or {}).items() if isinstance(k, str))
        return f"/automedia {obj.verb} {args}".rstrip()

    @admin.display(description=_("実行者"))
    def by(self, obj: CommandRun) -> str:
        user = obj.user if isinstance(obj.user, dict) else {}
        return str(user.get("name") or "-")

    @admin.display(description=_("結果"), ordering="result")
    def result_label(self, obj: CommandRun) -> str:
        return result_label(obj.result)


@admin.register(AIReview)
class AIReviewAdmin(RecordAdmin):
    """The review and whether it worked; which model wrote it is for superusers."""

    list_display = ("created_at", "tenant", "issue_key", "ok", "input_tokens", "output_tokens")
    list_filter = ("ok", "tenant")
    search_fields = ("issue_key",)

    def get_list_display(self, request: HttpRequest):
        shown = super().get_list_display(request)
        return [*shown, "model"] if request.user.is_superuser else shown

    def get_fields(self, request: HttpRequest, obj=None):
        fields = super().get_fields(request, obj)
        return fields if request.user.is_superuser else [f for f in fields if f != "model"]

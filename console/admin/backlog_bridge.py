"""Backlog events, comment commands and AI reviews (records: read-only, scoped to the user's tenants)."""

from __future__ import annotations

from django.contrib import admin
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

# What each Backlog activity type means (https://developer.nulab.com/docs/backlog/api/2/get-recent-updates/).
BACKLOG_TYPE_LABELS = {
    TYPE_CREATED: _("課題の追加"),
    TYPE_UPDATED: _("課題の更新"),
    TYPE_COMMENTED: _("コメント"),
    TYPE_DELETED: _("課題の削除"),
    TYPE_BULK_UPDATED: _("課題の一括更新"),
    TYPE_DATES_UPDATED: _("課題の日付の一括更新"),
}
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
    list_display = ("created_at", "tenant", "issue_key", "verb", "result")
    list_filter = ("verb", "tenant")
    search_fields = ("issue_key",)


@admin.register(AIReview)
class AIReviewAdmin(RecordAdmin):
    list_display = ("created_at", "tenant", "issue_key", "model", "ok", "input_tokens", "output_tokens")
    list_filter = ("ok", "tenant")
    search_fields = ("issue_key",)

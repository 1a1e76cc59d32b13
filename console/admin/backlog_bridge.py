"""Backlog events, comment commands and AI reviews (records: read-only, scoped to the user's tenants)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from backlog_bridge.models import HANDLED_TYPES, AIReview, BacklogEvent, CommandRun
from console.access import RecordAdmin
from console.filters import fixed_values_filter
from console.results import rejected_reason_label, result_label


@admin.register(BacklogEvent)
class BacklogEventAdmin(RecordAdmin):
    list_display = (
        "activity_id",
        "tenant",
        "type",
        "issue_key",
        "outcome",
        "reason_label",
        "received_at",
        "processed_at",
    )
    list_filter = (
        "tenant",
        fixed_values_filter("type", BacklogEvent._meta.get_field("type").verbose_name, sorted(HANDLED_TYPES)),
        "outcome",
        "source",
    )
    search_fields = ("issue_key", "activity_id")
    # Listed, not read from _meta: the fields of the abstract base would come first.
    readonly_fields = (
        "id",
        "tenant",
        "activity_id",
        "type",
        "issue_key",
        "payload",
        "source",
        "outcome",
        "detail_label",
        "attempts",
        "received_at",
        "processed_at",
        "claimed_until",
    )

    @admin.display(description=_("受付不可の理由"))
    def reason_label(self, obj: BacklogEvent) -> str:
        return rejected_reason_label(obj)

    @admin.display(description=_("詳細"))
    def detail_label(self, obj: BacklogEvent) -> str:
        return "; ".join(result_label(part) for part in obj.detail.split("; "))


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

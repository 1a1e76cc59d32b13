"""Backlog events, comment commands and AI reviews (records: read-only, scoped to the user's tenants)."""

from __future__ import annotations

from django.contrib import admin

from backlog_bridge.models import HANDLED_TYPES, AIReview, BacklogEvent, CommandRun
from console.access import RecordAdmin
from console.admin.stored_events import StoredEventAdmin


@admin.register(BacklogEvent)
class BacklogEventAdmin(StoredEventAdmin):
    list_display = ("activity_id", "tenant", "type", "issue_key", *StoredEventAdmin.ENDED)
    list_filter = StoredEventAdmin.filters(BacklogEvent, HANDLED_TYPES, "source")
    search_fields = ("issue_key", "activity_id")
    readonly_fields = ("id", "tenant", "activity_id", "type", "issue_key", "source", *StoredEventAdmin.RECORD)


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

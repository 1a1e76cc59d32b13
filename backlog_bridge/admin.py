"""Backlog events, comment commands and AI reviews (read-only, scoped to the user's tenants)."""

from __future__ import annotations

from django.contrib import admin

from backlog_bridge.models import AIReview, BacklogEvent, CommandRun
from console.access import TenantScopedAdmin


class ReadOnlyAdmin(TenantScopedAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(BacklogEvent)
class BacklogEventAdmin(TenantScopedAdmin):
    list_display = (
        "activity_id",
        "tenant",
        "type",
        "issue_key",
        "outcome",
        "received_at",
        "processed_at",
    )
    list_filter = ("tenant", "type", "outcome", "source")
    search_fields = ("issue_key", "activity_id")
    readonly_fields = [f.name for f in BacklogEvent._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(CommandRun)
class CommandRunAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "tenant", "issue_key", "verb", "result")
    list_filter = ("verb", "tenant")
    search_fields = ("issue_key",)


@admin.register(AIReview)
class AIReviewAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "tenant", "issue_key", "model", "ok", "input_tokens", "output_tokens")
    list_filter = ("ok", "tenant")
    search_fields = ("issue_key",)

from django.contrib import admin

from backlog_bridge.models import BacklogEvent


@admin.register(BacklogEvent)
class BacklogEventAdmin(admin.ModelAdmin):
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

from django.contrib import admin

from linepush.models import LineContact


@admin.register(LineContact)
class LineContactAdmin(admin.ModelAdmin):
    list_display = ("user_id", "display_name", "tenant", "blocked")
    list_filter = ("tenant", "blocked")
    search_fields = ("user_id", "display_name")

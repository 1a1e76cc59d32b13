"""The admin of stored webhook events (core.records.StoredWebhookEvent), shared by the
Backlog and LINE lists: read-only, how each event ended and why, in the admin's language."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin
from console.filters import fixed_values_filter
from console.results import rejected_reason_label, result_label
from core.records import StoredWebhookEvent


class StoredEventAdmin(RecordAdmin):
    """Each app's admin lists its own identifying columns before these."""

    ENDED = ("outcome", "reason_label", "received_at", "processed_at")  # list columns
    # Shown by their labels (each app's `type_label`, `detail_label`), not as stored.
    exclude = ("type", "detail")
    # Page fields, listed rather than read from _meta: the base's fields would come first.
    RECORD = (
        "payload",
        "outcome",
        "detail_label",
        "attempts",
        "received_at",
        "processed_at",
        "claimed_until",
    )

    @staticmethod
    def filters(model: type[StoredWebhookEvent], types, *more, labels=None) -> tuple:
        """The list's filters: tenant, the event types an app handles (by `labels`), outcome,
        then `more`."""
        title = model._meta.get_field("type").verbose_name
        return ("tenant", fixed_values_filter("type", title, sorted(types), labels), "outcome", *more)

    def get_fields(self, request: HttpRequest, obj=None):
        # The event as the platform sent it is machinery: superusers read it, managers read
        # how it ended.
        fields = super().get_fields(request, obj)
        return fields if request.user.is_superuser else [f for f in fields if f != "payload"]

    @admin.display(description=_("受付不可の理由"))
    def reason_label(self, obj: StoredWebhookEvent) -> str:
        return rejected_reason_label(obj)

    @admin.display(description=_("詳細"))
    def detail_label(self, obj: StoredWebhookEvent) -> str:
        return "; ".join(result_label(part) for part in obj.detail.split("; "))

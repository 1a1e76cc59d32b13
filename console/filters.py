"""List filters of the managers' admin."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib import admin
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.channels import channel_label
from core.timeutil import JST


class PublishDateFilter(admin.SimpleListFilter):
    """投稿日時 by day in JST: today, tomorrow, the coming week, the past week, none."""

    title = _("投稿日時")
    parameter_name = "publish"

    def lookups(self, request, model_admin):
        return [
            ("today", _("今日")),
            ("tomorrow", _("明日")),
            ("next7", _("今後 7 日間")),
            ("past7", _("過去 7 日間")),
            ("none", _("投稿日時なし")),
        ]

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        if self.value() == "none":
            return queryset.filter(publish_at__isnull=True)
        window = self._window(self.value())
        if window is None:
            return queryset
        return queryset.filter(publish_at__gte=window[0], publish_at__lt=window[1])

    @staticmethod
    def _window(value: str | None) -> tuple[datetime, datetime] | None:
        midnight = timezone.now().astimezone(JST).replace(hour=0, minute=0, second=0, microsecond=0)
        day = timedelta(days=1)
        windows = {
            "today": (midnight, midnight + day),
            "tomorrow": (midnight + day, midnight + 2 * day),
            "next7": (timezone.now(), midnight + 8 * day),
            "past7": (midnight - 7 * day, timezone.now()),
        }
        return windows.get(value or "")


class ChannelFilter(admin.SimpleListFilter):
    """The channels the user's tasks use, by their names (LINE, Instagram, …)."""

    title = _("チャネル")
    parameter_name = "channel"

    def lookups(self, request, model_admin):
        used = model_admin.get_queryset(request).exclude(channel="").values_list("channel", flat=True)
        return [(c, channel_label(c)) for c in sorted(set(used))]

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        return queryset.filter(channel=self.value()) if self.value() else queryset


def fixed_values_filter(field: str, title, values: list, labels=None) -> type[admin.SimpleListFilter]:
    """A filter on `field` listing `values` (each by its label in `labels`, if any), where
    Django's own would read the distinct values of the column on every page: a scan of an
    events table that grows by the day."""
    labels = labels or {}

    class FixedValuesFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request, model_admin):
            return [(str(v), labels.get(v, str(v))) for v in values]

        def queryset(self, request, queryset: QuerySet) -> QuerySet:
            return queryset.filter(**{field: self.value()}) if self.value() else queryset

    FixedValuesFilter.title = title
    return FixedValuesFilter

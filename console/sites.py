"""automedia's admin site: Japanese titles, the dashboard as the index page, and the 配信カレンダー."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.app_groups import grouped_app_list
from console.calendar import WEEK, CalendarQuery, Period, calendar_build, calendar_tenants
from console.dashboard import dashboard_build
from core.access import tenant_roles
from core.timeutil import JST


class AutomediaAdminSite(admin.AdminSite):
    site_header = _("automedia 管理")
    site_title = "automedia"
    index_title = _("ダッシュボード")
    index_template = "admin/console/dashboard.html"
    site_url = None  # the site is the admin: no 「サイトを表示」 link

    def get_app_list(self, request, app_label=None):
        """The index and the sidebar by what a manager does (console.app_groups); an app's own page as Django's."""
        app_list = super().get_app_list(request, app_label)
        if app_label is not None:
            return app_list
        return grouped_app_list(app_list, superuser=request.user.is_superuser)

    def index(self, request, extra_context=None):
        context = {"dashboard": dashboard_build(user=request.user, now=timezone.now())}
        return super().index(request, {**context, **(extra_context or {})})

    def get_urls(self):
        calendar = path("calendar/", self.admin_view(self.calendar_view), name="calendar")
        return [calendar, *super().get_urls()]

    def calendar_view(self, request: HttpRequest) -> TemplateResponse:
        """A week or a month of the user's deliveries and LINE group posts (console.calendar)."""
        if not (request.user.is_superuser or tenant_roles(request.user)):
            raise PermissionDenied
        now, tenants = timezone.now(), calendar_tenants(user=request.user)
        query = CalendarQuery(request.GET, tenants=tenants)
        period = Period(query.value("view", WEEK), query.value("date", now.astimezone(JST).date()))
        if query.errors:  # a stale or hand-made link: the page still answers, with the defaults
            messages.warning(request, gettext("表示条件の一部が読めないため、既定の値で表示しています。"))
        calendar = calendar_build(
            user=request.user, tenants=tenants, period=period, tenant_id=query.value("tenant", None), now=now
        )
        context = {**self.each_context(request), "title": gettext("配信カレンダー"), "calendar": calendar}
        return TemplateResponse(request, "admin/console/calendar.html", context)

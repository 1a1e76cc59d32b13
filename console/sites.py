"""automedia's admin site: Japanese titles and the dashboard as the index page."""

from __future__ import annotations

from django.contrib import admin
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from console.dashboard import dashboard_build


class AutomediaAdminSite(admin.AdminSite):
    site_header = _("automedia 管理")
    site_title = "automedia"
    index_title = _("ダッシュボード")
    index_template = "admin/console/dashboard.html"

    def index(self, request, extra_context=None):
        context = {"dashboard": dashboard_build(user=request.user, now=timezone.now())}
        return super().index(request, {**context, **(extra_context or {})})

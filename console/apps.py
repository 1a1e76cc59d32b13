"""The managers' admin: tenant access, the audit trail, the dashboard and its records."""

from __future__ import annotations

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.utils.translation import gettext_lazy as _


class ConsoleConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "console"
    verbose_name = _("管理画面")

    def ready(self) -> None:
        # The dashboard records each scan; the lifecycle below it does not import console.
        from console.records import scan_finished_received
        from deliveries.signals import scan_finished

        scan_finished.connect(scan_finished_received, dispatch_uid="console.scan_record")


class AutomediaAdminConfig(admin_apps.AdminConfig):
    """`django.contrib.admin` with automedia's site: the dashboard as its index page."""

    default = False  # installed by its path; `console` itself is ConsoleConfig
    default_site = "console.sites.AutomediaAdminSite"

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
        # The dashboard's records, on the lower layers' signals (they never import console).
        from console import records
        from core.retention import retention_rule_register
        from deliveries.signals import approval_refused, delivery_finished, scan_finished

        delivery_finished.connect(records.delivery_finished_received, dispatch_uid="console.delivery_outcome")
        approval_refused.connect(records.approval_refused_received, dispatch_uid="console.refusal")
        scan_finished.connect(records.scan_finished_received, dispatch_uid="console.scan_record")
        retention_rule_register(*records.RETENTION_RULES)


class AutomediaAdminConfig(admin_apps.AdminConfig):
    """`django.contrib.admin` with automedia's site: the dashboard as its index page."""

    default = False  # installed by its path; `console` itself is ConsoleConfig
    default_site = "console.sites.AutomediaAdminSite"

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BacklogBridgeConfig(AppConfig):
    name = "backlog_bridge"
    verbose_name = _("Backlog 連携")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from backlog_bridge import retention
        from backlog_bridge.schedules import ensure_recurring_jobs
        from core.retention import retention_rule_register

        post_migrate.connect(ensure_recurring_jobs, sender=self)
        retention_rule_register(*retention.RULES)

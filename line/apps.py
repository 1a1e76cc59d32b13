from django.apps import AppConfig


class LineConfig(AppConfig):
    name = "line"
    verbose_name = "LINE"

    def ready(self) -> None:
        from core.retention import retention_rule_register
        from line import retention

        retention_rule_register(*retention.RULES)

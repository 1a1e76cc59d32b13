from importlib import import_module

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeliveriesConfig(AppConfig):
    name = "deliveries"
    verbose_name = _("配信")

    def import_models(self) -> None:
        super().import_models()
        # The channel accounts and posts live beside the channel packages, which import the
        # models of deliveries/models.py: loaded here, they are the app's models too.
        import_module("deliveries.channels.models")

    def ready(self) -> None:
        # backlog_bridge's event drain acts through these; it imports nothing of deliveries.
        from backlog_bridge.events import event_handlers_register
        from backlog_bridge.signals import issues_listed
        from core.retention import retention_rule_register
        from deliveries import retention
        from deliveries.approve import lifecycle
        from deliveries.channels.line import line_user_erasing_received
        from deliveries.comment_commands import run
        from line.signals import line_user_erasing

        event_handlers_register({**lifecycle.EVENT_HANDLERS, **run.EVENT_HANDLERS})
        issues_listed.connect(lifecycle.issues_listed_received, dispatch_uid="deliveries.issues_listed")
        # The LINE channel stored LINE users' ids too: a user's erasure reaches them.
        line_user_erasing.connect(line_user_erasing_received, dispatch_uid="deliveries.line_user_erasing")
        retention_rule_register(*retention.RULES)

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeliveriesConfig(AppConfig):
    name = "deliveries"
    verbose_name = _("配信")

    def ready(self) -> None:
        # backlog_bridge's event drain acts through these; it imports nothing of deliveries.
        from backlog_bridge.events import event_handlers_register
        from deliveries import lifecycle
        from deliveries.commands import run

        event_handlers_register({**lifecycle.EVENT_HANDLERS, **run.EVENT_HANDLERS})

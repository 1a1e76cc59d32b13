from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LinepushConfig(AppConfig):
    name = "linepush"
    verbose_name = _("LINE グループ投稿")

    def ready(self) -> None:
        # linepush reacts to the delivery lifecycle below it and plugs its posts' pending
        # messages into the quota forecast below, which imports nothing of linepush.
        from core.retention import retention_rule_register
        from deliveries.signals import delivery_failed, task_approved, token_expired
        from line.forecast import pending_sender_register
        from linepush import (
            checks,  # noqa: F401 - registers the system checks
            retention,
        )
        from linepush.api import throttle_rate_require
        from linepush.producers import (
            delivery_failed_received,
            task_approved_received,
            token_expired_received,
        )
        from linepush.services import posts_pending

        task_approved.connect(task_approved_received, dispatch_uid="linepush.task_approved")
        delivery_failed.connect(delivery_failed_received, dispatch_uid="linepush.delivery_failed")
        token_expired.connect(token_expired_received, dispatch_uid="linepush.token_expired")
        pending_sender_register(posts_pending)
        retention_rule_register(*retention.RULES)
        throttle_rate_require()

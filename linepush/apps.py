from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LinepushConfig(AppConfig):
    name = "linepush"
    verbose_name = _("LINE グループ投稿")

    def ready(self) -> None:
        # linepush reacts to the delivery lifecycle below it and plugs its queue and its posts'
        # pending messages into the apps below, which import nothing of linepush.
        from core.retention import retention_rule_register
        from deliveries.scheduler_steps import scheduler_step_register
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
        from linepush.push import push_step
        from linepush.services import posts_pending

        scheduler_step_register(push_step)
        task_approved.connect(task_approved_received, dispatch_uid="linepush.task_approved")
        delivery_failed.connect(delivery_failed_received, dispatch_uid="linepush.delivery_failed")
        token_expired.connect(token_expired_received, dispatch_uid="linepush.token_expired")
        pending_sender_register(posts_pending)
        retention_rule_register(*retention.RULES)
        throttle_rate_require()

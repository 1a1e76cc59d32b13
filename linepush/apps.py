from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LinepushConfig(AppConfig):
    name = "linepush"
    verbose_name = _("LINE グループ投稿")

    def ready(self) -> None:
        # linepush reacts to the delivery lifecycle below it, which imports nothing of linepush.
        from deliveries.contacts import line_contacts_register
        from deliveries.quota_forecast import quota_forecaster_register
        from deliveries.scheduler_steps import scheduler_step_register
        from deliveries.signals import task_approved
        from linepush import checks  # noqa: F401 - registers the system checks
        from linepush.events import line_events_stranded_step
        from linepush.forecast import approval_forecast
        from linepush.producers import task_approved_received
        from linepush.push import push_step
        from linepush.services import contacts_matching

        scheduler_step_register(push_step)
        scheduler_step_register(line_events_stranded_step)
        task_approved.connect(task_approved_received, dispatch_uid="linepush.task_approved")
        line_contacts_register(contacts_matching)
        quota_forecaster_register(approval_forecast)

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeliveriesConfig(AppConfig):
    name = "deliveries"
    verbose_name = _("配信")

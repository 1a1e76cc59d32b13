from axes.apps import AppConfig as AxesAppConfig
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AutomediaSiteConfig(AppConfig):
    name = "automedia_site"
    verbose_name = "automedia"


class AxesConfig(AxesAppConfig):
    """django-axes under a Japanese name in the admin (it has none of its own)."""

    verbose_name = _("ログイン保護（django-axes）")

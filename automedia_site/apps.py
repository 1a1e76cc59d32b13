from axes.apps import AppConfig as AxesAppConfig
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AutomediaSiteConfig(AppConfig):
    name = "automedia_site"
    verbose_name = "automedia"

    def ready(self) -> None:
        # The login receiver: a session starts its idle time at login, before any request.
        from automedia_site import middleware  # noqa: F401


class AxesConfig(AxesAppConfig):
    """django-axes under a Japanese name in the admin (it has none of its own)."""

    verbose_name = _("ログイン保護（django-axes）")

from axes.apps import AppConfig as AxesAppConfig
from django.apps import AppConfig
from django.conf import settings
from django.core.management import call_command
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


def cache_table_create(sender, using: str = "default", **kwargs) -> None:
    """Production's default cache is the database's (settings CACHES without REDIS_URL):
    `migrate` makes its table, so the API's throttles count across processes from the start."""
    if sender.label != "core":  # once per migrate (automedia_site itself has no models)
        return
    if any(cache["BACKEND"].endswith(".DatabaseCache") for cache in settings.CACHES.values()):
        call_command("createcachetable", database=using, verbosity=0)


class AutomediaSiteConfig(AppConfig):
    # This module holds AxesConfig too: without `default`, Django would take neither and
    # ready() would never run.
    default = True
    name = "automedia_site"
    verbose_name = "automedia"

    def ready(self) -> None:
        # The login receiver: a session starts its idle time at login, before any request.
        from automedia_site import middleware  # noqa: F401

        post_migrate.connect(cache_table_create, dispatch_uid="automedia_cache_table")


class AxesConfig(AxesAppConfig):
    """django-axes under a Japanese name in the admin (it has none of its own)."""

    verbose_name = _("ログイン保護（django-axes）")

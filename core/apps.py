"""What every app shares: tenancy and access scoping, the list of channels, secrets at rest,
time, outbound HTTP and the webhook base view. The lowest layer: it imports none of the other
apps."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = _("テナントとアクセス")

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from core import db  # noqa: F401 - the connection check and the pool's fork hook
        from core.holders import sqlite_functions

        connection_created.connect(sqlite_functions, dispatch_uid="core.holders")

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LinepushConfig(AppConfig):
    name = "linepush"
    verbose_name = _("LINE グループ投稿")

    def ready(self) -> None:
        from linepush import checks  # noqa: F401 - registers the system checks

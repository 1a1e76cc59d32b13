from django.apps import AppConfig


class LinepushConfig(AppConfig):
    name = "linepush"
    verbose_name = "LINE グループ投稿"

    def ready(self) -> None:
        from linepush import checks  # noqa: F401 - registers the system checks

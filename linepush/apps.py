from django.apps import AppConfig


class LinepushConfig(AppConfig):
    name = "linepush"
    verbose_name = "LINE グループ投稿"

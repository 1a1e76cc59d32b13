from django.apps import AppConfig


class LineConfig(AppConfig):
    name = "line"
    verbose_name = "LINE"

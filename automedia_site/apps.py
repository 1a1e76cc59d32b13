from django.apps import AppConfig


class AutomediaSiteConfig(AppConfig):
    name = "automedia_site"
    verbose_name = "automedia"

"""The logging configuration (settings.LOGGING): what each logger prints, and the filters that
keep secrets out of every line (the Backlog webhook token in paths, the Backlog API key)."""

from __future__ import annotations


def logging_config(*, level: str, q_level: str) -> dict:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        # The Backlog webhook path carries the tenant's token: the loggers that print request
        # paths (`Not Found: /hooks/backlog/…`, runserver's access log) mask it.
        # Every printed line, and httpx's records (its request URLs), redact the Backlog API key.
        "filters": {
            "mask_webhook_tokens": {"()": "automedia_site.logmask.MaskWebhookTokens"},
            "redact_secrets": {"()": "core.redact.RedactSecrets"},
        },
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
            "django.server": {  # Django's own (DEFAULT_LOGGING), redeclared to add the filter
                "()": "django.utils.log.ServerFormatter",
                "format": "[{server_time}] {message}",
                "style": "{",
            },
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "filters": ["redact_secrets"],
            },
            "django.server": {
                "level": "INFO",
                "class": "logging.StreamHandler",
                "formatter": "django.server",
                "filters": ["redact_secrets"],
            },
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.request": {"filters": ["mask_webhook_tokens"]},
            "django.server": {
                "handlers": ["django.server"],
                "level": "INFO",
                "propagate": False,
                "filters": ["mask_webhook_tokens"],
            },
            # httpx logs every request's full URL at INFO: noise, and Backlog's apiKey (redacted).
            "httpx": {"level": "WARNING", "filters": ["redact_secrets"]},
            "httpcore": {"level": "WARNING", "filters": ["redact_secrets"]},
            # django-q2 logs every enqueue and task at INFO: noise, and a cost per webhook.
            # Its failed-task lines print the task's error: redacted as any other line.
            "django-q": {
                "level": q_level,
                "filters": ["redact_secrets"],
            },
        },
    }

"""Error reports (mails to ADMINS, DEBUG's 500 page) without the Backlog webhook token or
a secret typed into a form.

A report shows the request's path, full URL and META, and the local variables of each
frame (the webhook view's `token` argument, the resolver's kwargs): the path's token is
masked wherever it appears, in a path or on its own; so is a Backlog API key in a URL or a
header (a frame's request). settings.DEFAULT_EXCEPTION_REPORTER. Its POST section blanks
every secret field (an encrypted model field, or a name Django hides in settings):
settings.DEFAULT_EXCEPTION_REPORTER_FILTER.
"""

from __future__ import annotations

from functools import cache

from django.apps import apps
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

from automedia_site.logmask import MASK, path_tokens, paths_mask
from core.crypto import EncryptedTextField
from core.redact import secrets_redact


class MaskingExceptionReporter(ExceptionReporter):
    def get_traceback_html(self) -> str:
        return self._masked(super().get_traceback_html())

    def get_traceback_text(self) -> str:
        return self._masked(super().get_traceback_text())

    def _masked(self, report: str) -> str:
        path = self.request.path if self.request is not None else ""
        for token in path_tokens(path):
            report = report.replace(token, MASK)
        return secrets_redact(paths_mask(report))


@cache
def secret_field_names() -> frozenset[str]:
    """The names of every encrypted model field (a tenant's keys, a channel account's tokens)."""
    return frozenset(
        field.name
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if isinstance(field, EncryptedTextField)
    )


class SecretsExceptionReporterFilter(SafeExceptionReporterFilter):
    """A form's secret fields are blanked in a report's POST section, whichever view failed
    (Django blanks only what a view marks with `sensitive_post_parameters`)."""

    def get_post_parameters(self, request):
        params = super().get_post_parameters(request)
        if request is None or not params:
            return params
        secret = [name for name in params if self.is_secret(name)]
        if not secret:
            return params
        params = params.copy()
        for name in secret:
            params[name] = self.cleansed_substitute
        return params

    def is_secret(self, name: str) -> bool:
        # A formset prefixes its fields (`form-0-access_token`); settings' own rule catches
        # what is not a model field (`password1`, `api_key`).
        return self.hidden_settings.search(name) is not None or any(
            name == field or name.endswith(f"-{field}") for field in secret_field_names()
        )

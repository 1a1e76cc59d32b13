"""Error reports (mails to ADMINS, DEBUG's 500 page) without the Backlog webhook token.

A report shows the request's path, full URL and META, and the local variables of each
frame (the webhook view's `token` argument, the resolver's kwargs): the path's token is
masked wherever it appears, in a path or on its own; so is a Backlog API key in a URL or a
header (a frame's request). settings.DEFAULT_EXCEPTION_REPORTER.
"""

from __future__ import annotations

from django.views.debug import ExceptionReporter

from automedia_site.logmask import MASK, path_tokens, paths_mask
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

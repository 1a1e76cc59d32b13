"""The Backlog webhook URL carries its tenant's secret token (`/hooks/backlog/<slug>/<token>`):
every place that logs a path masks it (`/hooks/backlog/acme/****`).

Used by Django's request and runserver loggers (settings.LOGGING), by gunicorn's access
and error logs (gunicorn.conf.py) and by the error reports mailed to ADMINS
(`automedia_site.reporting`). No Django import: gunicorn's master loads this module.
"""

from __future__ import annotations

import logging
import re

MASK = "****"
# The token is one path segment; stop at what ends a segment in a path, a request line,
# a quoted log field or a query string.
_TOKEN_IN_PATH = re.compile(r"(/hooks/backlog/[^/\s\"'?#]+/)([^/\s\"'?#]+)")


def paths_mask(text: str) -> str:
    """`text` with the token of every Backlog webhook path in it replaced by ****."""
    if "/hooks/backlog/" not in text:  # the common case: no regex at all
        return text
    return _TOKEN_IN_PATH.sub(rf"\g<1>{MASK}", text)


def path_tokens(path: str) -> list[str]:
    """The webhook tokens a path carries (to mask them where they appear on their own)."""
    return [match[2] for match in _TOKEN_IN_PATH.finditer(path) if match[2] != MASK]


class MaskWebhookTokens(logging.Filter):
    """Rewrites a record whose message (or traceback) shows a webhook path. Attach it to
    the logger that creates the records: a logger's filters see only its own records."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = paths_mask(message)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = paths_mask(record.exc_text)
        return True


MASK_FILTER = MaskWebhookTokens()  # one instance: adding it twice to a logger is a no-op

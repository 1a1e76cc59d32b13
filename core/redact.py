"""Backlog's API key out of every printed text: request URLs carry it as `?apiKey=` (the
documented place, https://developer.nulab.com/docs/backlog/auth) and header dumps as
`Backlog-API-Key`. Log filters, error reports and stored errors pass through `secrets_redact`.

No Django import: the logging configuration and gunicorn's master load it.
"""

from __future__ import annotations

import logging
import re

MASK = "****"
_QUOTE = r"(?:['\"]|&#x27;|&#39;|&quot;)"  # a quote, HTML-escaped too (Django's error page)
# A query value ends at `&`, `#`, whitespace, a quote or a bracket (a URL inside a repr or a
# log line); the parameter name is matched in any case, percent-encoded `=` included, and
# as a `('apiKey', '…')` pair (the query list a frame of the client holds).
_API_KEY_PARAM = re.compile(
    rf"(apiKey(?:=|%3D|{_QUOTE}\s*,\s*b?{_QUOTE}))[^&#\s\"'<>()\[\]{{}},]+", re.IGNORECASE
)
# The header as a dict, a repr of headers, a raw request line or an HTML error page prints it.
_API_KEY_HEADER = re.compile(
    rf"(\bBacklog-API-Key\b{_QUOTE}?\s*[:=,]\s*b?{_QUOTE}?)[^'\"&\s,}}\])]+", re.IGNORECASE
)


def secrets_redact(text: str) -> str:
    """`text` with every Backlog API key in it replaced by ****."""
    lowered = text.lower()
    if "apikey" not in lowered and "backlog-api-key" not in lowered:  # the common case: no regex
        return text
    return _API_KEY_HEADER.sub(rf"\g<1>{MASK}", _API_KEY_PARAM.sub(rf"\g<1>{MASK}", text))


class RedactSecrets(logging.Filter):
    """Rewrites a record whose message or traceback shows an API key. On a handler it sees
    every record it prints; on a logger (httpx's) only that logger's own records."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = secrets_redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = secrets_redact(record.exc_text)
        return True


REDACT_FILTER = RedactSecrets()  # one instance: adding it twice to a logger is a no-op

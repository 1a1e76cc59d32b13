"""What automedia's webhook receivers (Backlog, LINE) share: machine-to-machine endpoints.

A webhook sender is a server, not a browser: it has no session, no language and no
say in the answer's format. These endpoints are kept lean: JSON in, JSON out, no
content negotiation, no authentication classes (each receiver checks its own token
or signature), and the browser middleware of `automedia_site.middleware` skip them.
A database that refuses the body or cannot be reached gets a clear answer, never a 500.
"""

from __future__ import annotations

import json
import re

from django.db import DatabaseError, DataError, IntegrityError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

WEBHOOK_PATH_PREFIX = "/hooks/"
# Backlog's and LINE's bodies nest a few levels (LINE's deepest, a postback in a message
# event, about 5); far deeper is no sender's body, and Python's json recurses per level.
MAX_JSON_DEPTH = 32
TOO_DEEP = f"body is not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels"


def body_json(raw: bytes) -> object:
    """A webhook body as JSON, or ValueError with the reason: not UTF-8 (json.loads would
    also guess UTF-16 or UTF-32), not JSON, NaN / Infinity (which json.loads would
    accept), nested deeper than MAX_JSON_DEPTH (`[[[[…` once made json.loads raise
    RecursionError, a 500), or text no database column can hold (`text_problem`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("body is not UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except ValueError as exc:
        raise ValueError(f"body is not valid JSON: {str(exc)[:80]}") from None
    problem = _walk_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def text_problem(text: str) -> str:
    """Why a string cannot be stored, or "": a lone surrogate (`"\\ud800"` is valid JSON,
    but UTF-8 cannot encode it: psycopg raised UnicodeEncodeError, not a database error)
    or NUL (PostgreSQL's text and jsonb refuse it)."""
    if "\x00" in text:
        return "text must not contain NUL (\\u0000)"
    if _SURROGATE.search(text):
        return "text must not contain a lone surrogate (\\ud800-\\udfff)"
    return ""


_SURROGATE = re.compile("[\ud800-\udfff]")


def _walk_problem(value: object) -> str:
    """The first problem of a parsed JSON value: too deep, or a string (value or key)
    `text_problem` refuses. Iterative: no recursion however deep the value."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if problem := text_problem(item):
                return f"body refused: {problem}"
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            return TOO_DEEP
        children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return ""


class JSONOnly(BaseContentNegotiation):
    """Always JSON, whatever the sender's Accept header says (DRF's documented
    "ignore client content negotiation" pattern): Backlog and LINE read only the status."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class WebhookView(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONOnly

    def handle_exception(self, exc):
        """A database that refuses this body for good is the body's fault (400: sending it
        again cannot help); only a database that cannot be reached now is a 503."""
        if isinstance(exc, DataError | IntegrityError | UnicodeError):
            # e.g. a value too long for its column, a CHECK constraint, or text psycopg
            # cannot encode; the receivers' shape checks are meant to catch these first.
            return Response({"error": f"body cannot be stored: {_first_line(exc)}"}, status=400)
        if isinstance(exc, DatabaseError):
            # Not accepted, so not lost: the sender may retry, and automedia's catch-up
            # (Backlog's activity list) reads what was missed within minutes.
            headers = {"Retry-After": "30"}
            return Response({"error": "event store unavailable; not accepted"}, status=503, headers=headers)
        return super().handle_exception(exc)


def _first_line(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return lines[0][:200] if lines else type(exc).__name__

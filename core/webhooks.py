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


def body_size_refusal(request, limit: int) -> Response | None:
    """A 400 for a Content-Length that is no length, a 413 for a body over `limit`; None
    when the body may be read. Checked before `request.body`: Django reads Content-Length
    with int() there, so `Content-Length: abc` would be a 500."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isascii() or not declared.isdigit():
        return Response({"error": "Content-Length is not a number of bytes"}, status=400)
    # Content-Length first; the body's own length when there is none (or a lying one).
    if int(declared) > limit or len(request.body) > limit:
        return Response({"error": f"body larger than {limit} bytes"}, status=413)
    return None


def body_json(raw: bytes) -> object:
    """A webhook body as JSON, or ValueError with the reason: `json_parse`'s, nested
    deeper than MAX_JSON_DEPTH, or text no database column can hold (`text_problem`)."""
    value = json_parse(raw)
    if problem := json_problem(value):
        raise ValueError(TOO_DEEP if problem == DEEP else f"body refused: {problem}")
    return value


def json_parse(raw: bytes) -> object:
    """A body as JSON, or ValueError when it is not UTF-8 (json.loads would also guess
    UTF-16 or UTF-32), not JSON, or holds NaN / Infinity (which json.loads would accept).
    Its strings are not checked (`json_problem` does, for the whole or per part).

    Python's parser recurses per level (`[[[[…` made it raise RecursionError, a 500):
    such a body is parsed again with every container below MAX_JSON_DEPTH replaced by
    CUT, which `json_problem` reports as too deep."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("body is not UTF-8") from None
    try:
        try:
            return json.loads(text, parse_constant=_no_constant)
        except RecursionError:
            return json.loads(_cut_deep(text), parse_constant=_no_constant)
    except ValueError as exc:
        raise ValueError(f"body is not valid JSON: {str(exc)[:80]}") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


# Stands for a container cut out below MAX_JSON_DEPTH. It holds NUL, which no accepted
# text holds, so it never passes `json_problem` whatever it is taken for.
CUT = "\x00nested too deep"
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _cut_deep(text: str) -> str:
    """The text with each container opening below MAX_JSON_DEPTH replaced by CUT (as a
    JSON string). A syntax error inside a cut container is not seen: its part of the body
    is refused as too deep instead."""
    parts, start, depth, opened = [], 0, 0, 0
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth == MAX_JSON_DEPTH + 1:
                opened = token.start()
        elif mark in "]}":
            if depth == MAX_JSON_DEPTH + 1:
                parts += [text[start:opened], json.dumps(CUT)]
                start = token.end()
            depth -= 1
    return "".join([*parts, text[start:]])


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
DEEP = f"nested deeper than {MAX_JSON_DEPTH} levels"


def json_problem(value: object, *, depth: int = 1) -> str:
    """Why a parsed JSON value (found `depth` levels down its body) cannot be stored, or
    "": nested deeper than MAX_JSON_DEPTH (DEEP), or a string (value or key) `text_problem`
    refuses. Iterative: no recursion however deep the value."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, str):
            if item == CUT:
                return DEEP
            if problem := text_problem(item):
                return problem
            continue
        if not isinstance(item, dict | list):
            continue
        if level > MAX_JSON_DEPTH:
            return DEEP
        children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children)
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

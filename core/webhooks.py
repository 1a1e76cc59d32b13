"""What automedia's webhook receivers (Backlog, LINE) share: machine-to-machine endpoints.

A webhook sender is a server, not a browser: it has no session, no language and no
say in the answer's format. These endpoints are kept lean: JSON in, JSON out, no
content negotiation, no authentication classes (each receiver checks its own token
or signature), and the browser middleware of `automedia_site.middleware` skip them.
A database that refuses the body or cannot be reached gets a clear answer, never a 500.
"""

from __future__ import annotations

import json

from django.db import DatabaseError, DataError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

WEBHOOK_PATH_PREFIX = "/hooks/"
# Backlog's and LINE's bodies nest a few levels (LINE's deepest, a postback in a message
# event, about 5); far deeper is no sender's body, and Python's json recurses per level.
MAX_JSON_DEPTH = 32


def body_json(raw: bytes) -> object:
    """A webhook body as JSON, or ValueError: not UTF-8 JSON, NaN / Infinity (which
    json.loads would accept), or nested deeper than MAX_JSON_DEPTH (`[[[[…` once made
    json.loads raise RecursionError, a 500)."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("body nests too deep") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise ValueError("body nests too deep")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _depth(value: object) -> int:
    """How deep containers nest in a parsed JSON value (iterative: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


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
        if isinstance(exc, DataError):  # e.g. PostgreSQL's jsonb refuses \u0000 in a string
            return Response({"error": f"body cannot be stored: {str(exc).splitlines()[0]}"}, status=400)
        if isinstance(exc, DatabaseError):
            # Not accepted, so not lost: the sender may retry, and automedia's catch-up
            # (Backlog's activity list) reads what was missed within minutes.
            headers = {"Retry-After": "30"}
            return Response({"error": "event store unavailable; not accepted"}, status=503, headers=headers)
        return super().handle_exception(exc)

"""What automedia's webhook receivers (Backlog, LINE) share: machine-to-machine endpoints.

A webhook sender is a server, not a browser: it has no session, no language and no
say in the answer's format. These endpoints are kept lean: JSON in, JSON out, no
content negotiation, no authentication classes (each receiver checks its own token
or signature), and the browser middleware of `automedia_site.middleware` skip them.
A database that refuses the body or cannot be reached gets a clear answer, never a 500.
"""

from __future__ import annotations

from django.db import DatabaseError, DataError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

WEBHOOK_PATH_PREFIX = "/hooks/"


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

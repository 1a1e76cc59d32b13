"""LINE webhook receiver: verify the signature, store raw events, dedupe, enqueue, answer 200 fast.

LINE does not resend a body answered with a 4xx, so only a body that is not a callback at
all (not JSON, not an object with an `events` list) is refused; each event of a callback
is stored on its own, an odd one `rejected` with its reason (line/event_shapes.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from rest_framework.response import Response

from core.models import Tenant
from core.webhooks import WebhookView, body_size_refusal, json_parse
from line.intake import line_events_accept, signature_valid

# Never a channel secret: an unknown tenant's body is checked against it, so that it
# takes the same work and gets the same answer as a bad signature.
NO_TENANT_SECRET = "no-tenant"  # noqa: S105


class LineWebhookView(WebhookView):
    def post(self, request, slug: str) -> Response:
        if refusal := body_size_refusal(request, settings.LINE_WEBHOOK_MAX_BYTES):
            return refusal
        tenant = Tenant.objects.filter(slug=slug, is_active=True).first()
        # An unknown tenant answers as a bad signature does: the answer never tells which
        # slugs exist.
        secret = tenant.line_channel_secret if tenant else NO_TENANT_SECRET
        signature = request.headers.get("X-Line-Signature", "")
        if not signature_valid(secret=secret, body=request.body, signature=signature) or tenant is None:
            return Response({"error": "invalid X-Line-Signature"}, status=401)
        try:
            payload = json_parse(request.body)
        except ValueError as exc:
            return Response({"error": str(exc)}, status=400)
        events = payload.get("events") if isinstance(payload, dict) else None
        if not isinstance(events, list):
            return Response({"error": "`events` (array) is missing"}, status=400)
        with transaction.atomic():
            counts = line_events_accept(tenant=tenant, events=events)
        return Response(counts)

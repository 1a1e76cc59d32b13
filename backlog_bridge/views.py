"""Backlog webhook receiver: verify, store raw, dedupe, enqueue, answer fast."""

from __future__ import annotations

import hmac
import json
import time

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import Http404
from rest_framework.response import Response

from automedia_site.webhooks import WebhookView
from backlog_bridge.services import PayloadError, webhook_accept
from deliveries.models import Tenant

TENANT_CACHE_SECONDS = 30.0
_tenants: dict[str, tuple[float, Tenant | None]] = {}


def _lookup(slug: str) -> Tenant | None:
    """Tenants by slug, cached briefly in-process: a webhook burst reads (and decrypts)
    the tenant row once, not once per request. Rotated tokens apply within 30 s."""
    now = time.monotonic()
    hit = _tenants.get(slug)
    if hit is None or hit[0] < now:
        hit = (now + TENANT_CACHE_SECONDS, Tenant.objects.filter(slug=slug, is_active=True).first())
        _tenants[slug] = hit
    return hit[1]


@receiver([post_save, post_delete], sender=Tenant)
def _forget_tenant(sender, instance: Tenant, **kwargs) -> None:
    _tenants.pop(instance.slug, None)


def _tenant_for(slug: str, token: str) -> Tenant:
    tenant = _lookup(slug)
    expected = tenant.webhook_token if tenant else "-"
    # Constant-time compare, also for unknown tenants; both answers are the same 404.
    if not hmac.compare_digest(expected.encode(), token.encode()) or tenant is None:
        raise Http404
    return tenant


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")  # json.loads would accept NaN and Infinity


class BacklogWebhookView(WebhookView):
    def post(self, request, slug: str, token: str) -> Response:
        tenant = _tenant_for(slug, token)
        limit = settings.BACKLOG_WEBHOOK_MAX_BYTES
        # Content-Length first; the body's own length when there is none (or a lying one).
        if int(request.META.get("CONTENT_LENGTH") or 0) > limit or len(request.body) > limit:
            return Response({"error": f"body larger than {limit} bytes"}, status=413)
        try:
            payload = json.loads(request.body, parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError):
            return Response({"error": "body is not valid JSON"}, status=400)
        try:
            result = webhook_accept(tenant=tenant, payload=payload)  # one INSERT, autocommit
        except PayloadError as exc:
            return Response({"error": str(exc)}, status=400)
        return Response({"result": result})

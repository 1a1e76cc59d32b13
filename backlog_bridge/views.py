"""Backlog webhook receiver: verify, store raw, dedupe, enqueue, answer fast."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.db.models import ExpressionWrapper, F, TextField
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import Http404
from rest_framework.response import Response

from backlog_bridge.activities import PayloadError
from backlog_bridge.services import webhook_accept
from core.models import Tenant
from core.webhooks import WebhookView, body_json, body_size_refusal

_tenants: dict[str, Tenant] = {}
"""Tenants by slug whose webhook token a request of this process matched: a webhook
burst reads (and decrypts) the tenant row once, not once per request. Never trusted
alone: the event INSERT stores the event only while the row still holds the token
that was read (`stored_webhook_token`), so a token rotated or a tenant deactivated in
any process stops working at the next request, with no query added to the fast path."""


def _lookup(slug: str) -> Tenant | None:
    stored = ExpressionWrapper(F("webhook_token"), output_field=TextField())  # as stored: encrypted
    return Tenant.objects.filter(slug=slug, is_active=True).annotate(stored_webhook_token=stored).first()


@receiver([post_save, post_delete], sender=Tenant)
def _forget_tenant(sender, instance: Tenant, **kwargs) -> None:
    _tenants.pop(instance.slug, None)


def _matches(tenant: Tenant | None, token: str) -> bool:
    expected = tenant.webhook_token if tenant else "-"
    # Constant-time compare, also for unknown tenants; both answers are the same 404.
    return hmac.compare_digest(expected.encode(), token.encode()) and tenant is not None


def _tenant_for(slug: str, token: str) -> tuple[Tenant, bool]:
    """The tenant whose webhook token this is, and whether it came from this process's memory."""
    tenant = _tenants.get(slug)
    if _matches(tenant, token):
        return tenant, True
    tenant = _lookup(slug)  # not known here, or its token was rotated (maybe to this one)
    if not _matches(tenant, token):
        raise Http404
    _tenants[slug] = tenant
    return tenant, False


class BacklogWebhookView(WebhookView):
    def post(self, request, slug: str, token: str) -> Response:
        tenant, remembered = _tenant_for(slug, token)
        response = self._accept(request, tenant)
        if remembered and not _stored(response):
            # Nothing stored with the remembered row: a duplicate or a bad body, or the
            # row changed since (its token rotated, the tenant deactivated or edited).
            # Read it again: another token is a 404, an edited tenant gets a second try.
            _tenants.pop(slug, None)
            tenant, _ = _tenant_for(slug, token)
            response = self._accept(request, tenant)
        return response

    def _accept(self, request, tenant: Tenant) -> Response:
        if refusal := body_size_refusal(request, settings.BACKLOG_WEBHOOK_MAX_BYTES):
            return refusal
        try:
            payload = body_json(request.body)
        except ValueError as exc:
            return Response({"error": str(exc)}, status=400)
        try:
            # One INSERT (autocommit), made only while the tenant's row holds the token read.
            result = webhook_accept(tenant=tenant, payload=payload, stored_token=tenant.stored_webhook_token)
        except PayloadError as exc:
            return Response({"error": str(exc)}, status=400)
        return Response({"result": result})


def _stored(response: Response) -> bool:
    return response.status_code == 200 and response.data["result"] != "duplicate"

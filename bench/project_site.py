"""The webhook benchmark's in-project baseline: automedia's own settings, middleware and
webhook base view (DRF), with the webhook route answered by a bare view that only reads
the body.

`DJANGO_SETTINGS_MODULE=bench.project_site gunicorn automedia_site.wsgi` — it measures
what the framework costs, so the comparison isolates automedia's own work (tenant
check, dedupe insert, enqueue).
"""

from __future__ import annotations

from django.urls import path
from rest_framework.response import Response

from automedia_site.settings import *  # noqa: F403
from core.webhooks import WebhookView

ROOT_URLCONF = "bench.project_site"


class BareWebhookView(WebhookView):  # the receiver's own base class: same DRF setup
    def post(self, request, slug: str, token: str) -> Response:
        return Response({"result": "accepted", "bytes": len(request.body)})


urlpatterns = [path("hooks/backlog/<slug:slug>/<str:token>", BareWebhookView.as_view())]

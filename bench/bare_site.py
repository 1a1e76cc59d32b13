"""A bare Django site for the webhook benchmark's baseline (`bench/webhook.py`).

Use it as the settings module and the WSGI app at once:
`DJANGO_SETTINGS_MODULE=bench.bare_site gunicorn bench.bare_site:application`.
No apps, no middleware, no database: one view that reads the body and answers JSON.
"""

from __future__ import annotations

import secrets

from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, JsonResponse
from django.urls import path

DEBUG = False
SECRET_KEY = secrets.token_urlsafe(50)
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = __name__
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
DATABASES: dict = {}
USE_TZ = True


def bare_webhook(request: HttpRequest, slug: str, token: str) -> JsonResponse:
    if request.method != "POST":
        return JsonResponse({"error": "POST only"}, status=405)
    response = JsonResponse({"result": "accepted", "bytes": len(request.body)})
    response["Content-Length"] = len(response.content)  # as CommonMiddleware does in automedia
    return response


urlpatterns = [path("hooks/backlog/<slug:slug>/<str:token>", bare_webhook)]


# Importing this module as the WSGI app makes Django import it again as the settings
# module: it is already in sys.modules by then, with every setting above defined.
application = get_wsgi_application()

"""Project middleware: Django's own, with webhook requests passed straight through.

A webhook sender (Backlog, LINE) is a server, not a browser: it has no session, no
logged-in user, no CSRF cookie, no flash messages, no language and no frames. The
browser middleware below skip requests under WEBHOOK_PATH_PREFIX and behave exactly
as Django's everywhere else; SecurityMiddleware and CommonMiddleware stay Django's
own and see every request. Skipping them saves a good share of a webhook's CPU
(docs/benchmarks/history/webhook.md).
"""

from __future__ import annotations

import time

from csp import middleware as csp
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.auth import user_logged_in
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.dispatch import receiver
from django.middleware import clickjacking, csrf, locale
from django.utils import translation

from console import preview_images
from core.webhooks import WEBHOOK_PATH_PREFIX


class BrowserOnly:
    """Mixin for a Django middleware class: webhook requests bypass it."""

    def __call__(self, request):
        if request.path_info.startswith(WEBHOOK_PATH_PREFIX):
            return self.get_response(request)
        return super().__call__(request)


# A session ends SESSION_COOKIE_AGE (SESSION_IDLE_TIMEOUT_SECONDS) after it was last saved.
# A request of a logged-in user saves it again, so its idle time starts anew, but at most
# once a minute: a write on every admin request would cost each page its queries.
SEEN_KEY = "_automedia_seen"
SEEN_EVERY_SECONDS = 60


class SessionMiddleware(BrowserOnly, sessions.SessionMiddleware):
    def process_response(self, request, response):
        session = getattr(request, "session", None)
        if session is not None and session.accessed and not session.is_empty():
            now = int(time.time())
            if now - session.get(SEEN_KEY, 0) >= SEEN_EVERY_SECONDS:
                session[SEEN_KEY] = now  # modified: Django saves it with a new expiry
        return super().process_response(request, response)


@receiver(user_logged_in)
def _session_seen_at_login(sender, request, user, **kwargs) -> None:
    if getattr(request, "session", None) is not None:
        request.session[SEEN_KEY] = int(time.time())


class LocaleMiddleware(BrowserOnly, locale.LocaleMiddleware):
    def __call__(self, request):
        if request.path_info.startswith(WEBHOOK_PATH_PREFIX):
            # Webhooks run in the default language (ja), not in the language a previous
            # request activated in this thread.
            translation.activate(settings.LANGUAGE_CODE)
        return super().__call__(request)


class CsrfViewMiddleware(BrowserOnly, csrf.CsrfViewMiddleware):
    pass  # webhook views are csrf_exempt (DRF) and check their own token or signature


class AuthenticationMiddleware(BrowserOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(BrowserOnly, messages.MessageMiddleware):
    pass


class XFrameOptionsMiddleware(BrowserOnly, clickjacking.XFrameOptionsMiddleware):
    pass


class CSPMiddleware(BrowserOnly, csp.CSPMiddleware):
    """django-csp's Content-Security-Policy header (automedia_site/content_security.py), with
    img-src widened on a page by the origins of the images a preview drew on it: a held
    image loads once the manager clicks it, and no other outside image loads at all."""

    async_capable = False  # the drawn origins are collected around one synchronous call

    def __call__(self, request):
        with preview_images.collecting():
            return super().__call__(request)

    def get_policy_parts(self, request, response, report_only=False):
        parts = super().get_policy_parts(request, response, report_only)
        drawn = sorted(preview_images.drawn_origins())
        if drawn:
            update = dict(parts.update or {})
            parts.update = {**update, "img-src": [*update.get("img-src", ()), *drawn]}
        return parts

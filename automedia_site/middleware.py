"""Project middleware: Django's own, with webhook requests passed straight through.

A webhook sender (Backlog, LINE) is a server, not a browser: it has no session, no
logged-in user, no CSRF cookie, no flash messages, no language and no frames. The
browser middleware below skip requests under WEBHOOK_PATH_PREFIX and behave exactly
as Django's everywhere else; SecurityMiddleware and CommonMiddleware stay Django's
own and see every request. Skipping them takes about a fifth of a webhook's CPU
(docs/BENCHMARKS.md, bench-webhook).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.middleware import clickjacking, csrf, locale
from django.utils import translation

from core.webhooks import WEBHOOK_PATH_PREFIX


class BrowserOnly:
    """Mixin for a Django middleware class: webhook requests bypass it."""

    def __call__(self, request):
        if request.path_info.startswith(WEBHOOK_PATH_PREFIX):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(BrowserOnly, sessions.SessionMiddleware):
    pass


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

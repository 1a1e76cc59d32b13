"""Images a preview draws: at once from the hosts its tenant allows, else on a click.

A preview draws image URLs that come from outside (an issue body, an API token's post).
Loading one in the manager's browser tells its host who looked and when, so an image
loads at once only over https from a host in the tenant's 「プレビューで画像をすぐ表示する
ホスト」; any other http(s) image is a placeholder whose button loads it
(console/static/console/console.js).

The site's Content-Security-Policy lets img-src reach only the site itself; a page widens
it by exactly the origins drawn on it, so a held image can load once clicked and nothing
else can (automedia_site.middleware.CSPMiddleware reads `drawn_origins`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from urllib.parse import urlsplit

from core.models import IMAGE_HOST

_drawn: ContextVar[set[str] | None] = ContextVar("preview_image_origins", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[set[str]]:
    """The origins of the images drawn while handling one request."""
    origins: set[str] = set()
    token = _drawn.set(origins)
    try:
        yield origins
    finally:
        _drawn.reset(token)


def drawn_origins() -> set[str]:
    return set(_drawn.get() or ())


def image(url: object, hosts: frozenset[str]) -> dict | None:
    """An http(s) image as the templates draw it (admin/console/preview_image.html):
    `shown` loads at once; otherwise a button names the host and loads it on a click.
    Anything else (another scheme, a host that is no plain host name) is not drawn."""
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = f"{parts.hostname or ''}{f':{port}' if port else ''}"
    if not IMAGE_HOST.fullmatch(host):
        return None
    origins = _drawn.get()
    if origins is not None:
        origins.add(f"{parts.scheme}://{host}")
    return {"url": url, "host": host, "shown": parts.scheme == "https" and host in hosts}

"""drf-spectacular: the published schema covers the public API only (`/api/…`), not webhooks."""

from __future__ import annotations


def public_api_only(endpoints: list, **kwargs) -> list:
    return [
        endpoint for endpoint in endpoints if endpoint[0].startswith("/api/") and "/schema" not in endpoint[0]
    ]

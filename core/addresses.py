"""The client's address of a request, one rule for the admin's login lockout and the API.

django-axes reads it with django-ipware under its `AXES_IPWARE_*` settings: REMOTE_ADDR, or
behind proxies the operator counted, X-Forwarded-For (settings.py, docs/SECURITY.md).
"""

from __future__ import annotations

from axes.helpers import get_client_ip_address


def client_address(request) -> str:
    return get_client_ip_address(request) or "unknown"

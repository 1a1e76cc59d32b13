"""Shared outbound HTTP settings."""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle costs ~25 ms of CPU, which a
    new httpx client per delivery would otherwise pay every time."""
    return httpx.create_ssl_context()

"""Shared outbound HTTP settings."""

from __future__ import annotations

import ssl
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from typing import Protocol

import httpx


@cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle costs ~25 ms of CPU, which a
    new httpx client per delivery would otherwise pay every time."""
    return httpx.create_ssl_context()


class Closable(Protocol):
    def close(self) -> None: ...


class ClientCache:
    """Kept-alive HTTP clients of one worker process, keyed by where they go and as whom.

    A delivery or push reuses the connection the previous one opened instead of opening
    (and the fake or real server accepting) a new one per call. Least recently used
    clients beyond `size` are closed.
    """

    def __init__(self, factory: Callable[..., Closable], size: int = 32):
        self._factory = factory
        self._size = size
        self._clients: OrderedDict[tuple, Closable] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, *key):
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._factory(*key)
                if len(self._clients) > self._size:
                    self._clients.popitem(last=False)[1].close()
            self._clients.move_to_end(key)
            return client

"""Shared outbound HTTP settings."""

from __future__ import annotations

import select
import socket
import ssl
import threading
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from typing import Protocol

import httpcore
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


class KeptAlivePool:
    """HTTP/1.1 keep-alive connections in a few lines of plain sockets, behind httpcore's
    pool interface (`handle_request(httpcore.Request) -> httpcore.Response`), so that
    `httpx.HTTPTransport` (and respx, which patches that interface) use it unchanged.

    httpcore's own pool parses every answer with h11 in pure Python and writes a request's
    head and body apart: 0.49 ms of CPU per small JSON POST against the fake LINE, about
    0.25 ms here (one write per request; docs/BENCHMARKS.md, LINE group posts, issue 17).
    Like httpcore it never resends a request that was (perhaps) sent: a kept connection
    the server closed while idle is dropped before use, one that fails after the request
    was written is an error. Each request holds its connection alone; idle ones are kept
    per origin, at most `keep`.
    """

    def __init__(self, ssl_context: ssl.SSLContext, keep: int = 10):
        self._ssl_context = ssl_context
        self._keep = keep
        self._idle: dict[tuple, list[_Connection]] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        url = request.url
        origin = (url.scheme, url.host, url.port)
        timeouts = request.extensions.get("timeout", {})
        head, body = _request_bytes(request)
        connection = self._idle_connection(origin) or _Connection.open(
            origin, timeouts.get("connect"), self._ssl_context
        )
        try:
            connection.sock.settimeout(timeouts.get("read"))
            connection.sock.sendall(head + body)
            status, reason, headers, content, keep = connection.read_response(request.method)
        except TimeoutError as exc:
            connection.close()
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            connection.close()
            raise httpcore.ReadError(f"{type(exc).__name__}: {exc}") from exc
        except httpcore.RemoteProtocolError:
            connection.close()
            raise
        if keep:
            self._release(origin, connection)
        else:
            connection.close()
        return httpcore.Response(
            status=status,
            headers=headers,
            content=content,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )

    def _idle_connection(self, origin: tuple) -> _Connection | None:
        while True:
            with self._lock:
                idle = self._idle.get(origin)
                connection = idle.pop() if idle else None
            if connection is None or not connection.readable():
                return connection
            connection.close()  # the server closed it (or sent something unasked) while idle

    def _release(self, origin: tuple, connection: _Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if len(idle) < self._keep:
                idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        with self._lock:
            connections = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for connection in connections:
            connection.close()


def _request_bytes(request: httpcore.Request) -> tuple[bytes, bytes]:
    body = b"".join(request.stream)
    lines = [request.method + b" " + request.url.target + b" HTTP/1.1"]
    length = False
    for name, value in request.headers:
        lowered = name.lower()
        if lowered == b"transfer-encoding":  # the body goes whole, with its length
            continue
        length = length or lowered == b"content-length"
        lines.append(name + b": " + value)
    if body and not length:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n", body


class _Connection:
    MAX_LINE = 65536

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.reader = sock.makefile("rb")

    @classmethod
    def open(cls, origin: tuple, timeout: float | None, context: ssl.SSLContext) -> _Connection:
        scheme, host, port = origin
        host = host.decode("ascii")
        tls = scheme == b"https"
        try:
            sock = socket.create_connection((host, port or (443 if tls else 80)), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                sock = context.wrap_socket(sock, server_hostname=host)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"{type(exc).__name__}: {exc}") from exc
        return cls(sock)

    def readable(self) -> bool:
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def _line(self) -> bytes:
        line = self.reader.readline(self.MAX_LINE + 1)
        if len(line) > self.MAX_LINE:
            raise httpcore.RemoteProtocolError("header line too long")
        return line

    def read_response(self, method: bytes) -> tuple[int, bytes, list, bytes, bool]:
        """(status, reason, headers, body, whether the connection may be kept)."""
        line = self._line()
        if not line:
            raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
        version, _, rest = line.rstrip(b"\r\n").partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or not code.isdigit():
            raise httpcore.RemoteProtocolError(f"malformed status line {line[:100]!r}")
        status = int(code)
        headers = []
        while (line := self._line()) not in (b"\r\n", b"\n", b""):
            name, colon, value = line.partition(b":")
            if not colon:
                raise httpcore.RemoteProtocolError(f"malformed header line {line[:100]!r}")
            headers.append((name.strip(), value.strip()))
        fields = {name.lower(): value for name, value in headers}
        keep = version == b"HTTP/1.1" and fields.get(b"connection", b"").lower() != b"close"
        if method == b"HEAD" or status in (204, 304) or status < 200:
            return status, reason, headers, b"", keep
        if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            return status, reason, headers, self._chunked(), keep
        if b"content-length" in fields:
            length = int(fields[b"content-length"])
            body = self.reader.read(length)
            if len(body) != length:
                raise httpcore.RemoteProtocolError("Server disconnected before the end of the body.")
            return status, reason, headers, body, keep
        return status, reason, headers, self.reader.read(), False  # until the server closes

    def _chunked(self) -> bytes:
        parts = []
        while size := int(self._line().split(b";")[0].strip() or b"0", 16):
            parts.append(self.reader.read(size))
            self._line()
        while self._line() not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return b"".join(parts)


def kept_alive_transport() -> httpx.HTTPTransport | None:
    """An httpx transport on `KeptAlivePool`; None (httpx's own) when the environment names
    a proxy, which httpx honours only for the transports it builds itself."""
    if urllib.request.getproxies():
        return None
    transport = httpx.HTTPTransport(verify=ssl_context())
    transport._pool = KeptAlivePool(ssl_context())
    return transport

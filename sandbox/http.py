"""The one HTTP base of every fake: a loopback server on a thread, requests in, responses out.

A fake subclasses ``HttpFake`` and implements ``answer(request) -> HttpResponse | None``
(None drops the connection without an answer, "the response was lost"). The plumbing here
is the same for all: HTTP/1.1 keep-alive so clients reuse one connection, no Nagle delay,
the arrival time stamped when the request line is read (benchmarks measure lateness from
it), the answer written in one piece, and ``stop()`` ending kept-alive connections so that
no handler thread outlives its fake.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs

__all__ = ["HttpFake", "HttpRequest", "HttpResponse", "json_response", "phrase"]

logger = logging.getLogger(__name__)

JSON = "application/json"


@dataclass(slots=True)
class HttpRequest:
    method: str
    path: str  # without the query string, not unquoted
    query_string: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    received_at: float  # time.time() when the request line was read

    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.query_string, keep_blank_values=True) if self.query_string else {}

    @property
    def content_length(self) -> int:
        return int(self.headers.get("content-length") or 0)


@dataclass(slots=True)
class HttpResponse:
    status: int
    body: bytes = b""
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)
    close: bool = False  # end the connection after this answer ("Connection: close")


def json_response(
    status: int, payload: Any, headers: dict[str, str] | None = None, *, content_type: str = JSON
) -> HttpResponse:
    body = json.dumps(payload, ensure_ascii=False).encode()
    return HttpResponse(status, body, content_type, dict(headers or {}))


def phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class HttpFake(ABC):
    """A fake outside service served on loopback: lifecycle here, answers in the subclass."""

    name = "fake"
    """The name of the serving thread."""

    max_body_bytes: int | None = None
    """Read at most this much of a request body (the rest is ignored); None: all of it."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._held_lock = threading.Lock()
        self._released = threading.Event()
        self.held = 0
        """Answers being held back right now (hold())."""

    def hold(self, seconds: float) -> None:
        """Hold an answer back `seconds` (a slow service), or until release_held() or stop():
        a test can make an answer as late as it likes and still never wait it out."""
        if seconds <= 0:
            return
        released = self._released
        with self._held_lock:
            self.held += 1
        try:
            released.wait(seconds)
        finally:
            with self._held_lock:
                self.held -= 1

    def release_held(self) -> None:
        """Send every answer held back now (later ones are held again)."""
        with self._held_lock:
            released, self._released = self._released, threading.Event()
        released.set()

    @abstractmethod
    def answer(self, request: HttpRequest) -> HttpResponse | None:
        """The response to ``request``, or None to drop the connection without one."""

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        """Before the body is read (``request.body`` is empty): an answer that refuses the
        request (too large, chunked), or None to read the body and ``answer``."""
        return None

    def started(self) -> None:
        """Called once the server listens (start helpers such as a webhook poster)."""
        return None

    def stopped(self) -> None:
        """Called once the server is closed."""
        return None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._server = _Server(self._address, self)
        # A short poll interval: stop() waits up to one interval.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name=self.name, daemon=True
        )
        self._thread.start()
        self.started()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self.release_held()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.stopped()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    """A threaded server that knows its open connections, so stop() can end them."""

    daemon_threads = True
    request_queue_size = 1024  # benchmarks open many connections at once

    def __init__(self, address: tuple[str, int], fake: HttpFake) -> None:
        self.fake = fake
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def add_connection(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def discard_connection(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def close_connections(self) -> None:
        """End kept-alive connections so that their handler threads exit on stop()."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so clients reuse one connection
    disable_nagle_algorithm = True  # else headers and body, written apart, wait ~40 ms for an ACK
    server: _Server
    received_at = 0.0

    def setup(self) -> None:
        super().setup()
        self.server.add_connection(self.connection)

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):
            super().handle()

    def finish(self) -> None:
        try:
            with contextlib.suppress(ConnectionError):
                super().finish()
        finally:
            self.server.discard_connection(self.connection)

    def parse_request(self) -> bool:
        # Called right after the request line was read: the arrival time of the request.
        self.received_at = time.time()
        return super().parse_request()

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._serve()

    def do_POST(self) -> None:  # noqa: N802
        self._serve()

    def do_PATCH(self) -> None:  # noqa: N802
        self._serve()

    def do_PUT(self) -> None:  # noqa: N802
        self._serve()

    def do_DELETE(self) -> None:  # noqa: N802
        self._serve()

    def _serve(self) -> None:
        fake = self.server.fake
        path, _, query = self.path.partition("?")
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = HttpRequest(self.command, path, query, headers, b"", self.received_at)
        response = fake.refuse(request)
        if response is None:
            request.body = self._read_body(request.content_length, fake.max_body_bytes)
            response = fake.answer(request)
        if response is None:
            self._drop()
        else:
            self._write(response)

    def _read_body(self, length: int, limit: int | None) -> bytes:
        if limit is not None:
            length = min(length, limit)
        return self.rfile.read(length) if length > 0 else b""

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _write(self, response: HttpResponse) -> None:
        if response.close:
            self.close_connection = True
        lines = [
            f"HTTP/1.1 {response.status} {phrase(response.status)}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
        ]
        lines.extend(f"{name}: {value}" for name, value in response.headers.items())
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + response.body)
        except ConnectionError:
            self.close_connection = True  # the client gave up, e.g. during an injected delay

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s " + format, self.address_string(), *args)

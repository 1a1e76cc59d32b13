"""The HTTP plumbing every fake server shares: keep-alive, no Nagle delay, clean stop."""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeServer(ThreadingHTTPServer):
    """A threaded server that knows its open connections, so stop() can end them."""

    daemon_threads = True
    request_queue_size = 1024  # benchmarks open many connections at once

    def __init__(self, address: tuple[str, int], fake: Any, handler: type[BaseHTTPRequestHandler]) -> None:
        self.fake = fake
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

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


class KeepAliveHandler(BaseHTTPRequestHandler):
    """Routes every method to `_serve()`, which each fake's handler defines."""

    protocol_version = "HTTP/1.1"  # keep-alive, so clients reuse one connection
    disable_nagle_algorithm = True  # else headers and body, written apart, wait ~40 ms for an ACK
    server: FakeServer

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

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def serve_in_thread(
    address: tuple[str, int], fake: Any, handler: type[BaseHTTPRequestHandler], name: str
) -> tuple[FakeServer, threading.Thread]:
    """Start a fake's server on a daemon thread; stop it with `stop_serving`."""
    server = FakeServer(address, fake, handler)
    # A short poll interval: stop() waits up to one interval.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, name=name, daemon=True
    )
    thread.start()
    return server, thread


def stop_serving(server: FakeServer, thread: threading.Thread | None) -> None:
    server.shutdown()
    server.close_connections()
    server.server_close()
    if thread is not None:
        thread.join(timeout=5)

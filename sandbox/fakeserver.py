"""The HTTP plumbing the fake Instagram, TikTok and HubSpot servers share.

Same approach as ``sandbox/line.py``: a stdlib ``ThreadingHTTPServer`` on loopback, state
behind one lock, every answered request recorded for assertions, faults injected with
``fail_next``. A subclass lists its routes and says how it authenticates and how its
errors look; handlers return a ``Reply`` or raise ``ApiError``.

Faults (in the order added; each applies to the next ``count`` matching requests, after
authentication and before routing):

- ``status`` ≥ 400: answer that error (default body: the platform's error shape); nothing
  happens on the server unless ``then_accept=True``, in which case the request is carried
  out first and only its answer is replaced.
- ``drop=True``: carry the request out, then close the connection without an answer —
  "succeeded on the server, the response was lost" (the client sees a dropped connection).
- ``delay``: wait that many seconds before answering (with ``status=0``: then serve
  normally), so a client with a shorter timeout times out; with ``then_accept`` or ``drop``
  the request has already been carried out when the client gives up.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from sandbox._http import FakeServer as HttpServer
from sandbox._http import KeepAliveHandler

logger = logging.getLogger(__name__)

Json = dict[str, Any]
MAX_BODY_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, a form as {name: value}, or None
    status: int  # 0 = the connection was dropped without an answer
    response: Any
    effect: bool  # the request changed the server's state (published, created, sent …)
    received_at: float


@dataclass(slots=True)
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    effect: bool = False


class ApiError(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None):
        super().__init__(str(body))
        self.status = status
        self.body = body
        self.headers = dict(headers or {})

    def reply(self) -> Reply:
        return Reply(self.status, self.body, dict(self.headers))


@dataclass(slots=True)
class _Fault:
    status: int
    count: int
    path_prefix: str | None
    method: str | None
    body: Any
    headers: dict[str, str]
    delay: float
    then_accept: bool
    drop: bool

    def matches(self, method: str, path: str) -> bool:
        return (self.path_prefix is None or path.startswith(self.path_prefix)) and (
            self.method is None or self.method == method
        )


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    received_at: float

    def param(self, name: str, default: str = "") -> str:
        values = self.query.get(name)
        return values[0] if values else default


Handler = Callable[..., Reply]


class FakeServer(ABC):
    """Base of a fake platform: lifecycle, recording, faults, routing."""

    name = "fake"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.requests: list[RecordedRequest] = []
        self.received: list[Request] = []  # at arrival, before any injected delay (requests: when answered)
        self.clock: Callable[[], float] = time.time
        """Wall clock for expiries and rate windows; tests may replace it."""
        self._address = (host, port)
        self._lock = threading.RLock()
        self._faults: list[_Fault] = []
        self._server: HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._routes = [(method, re.compile(pattern), handler) for method, pattern, handler in self.routes()]

    # -- for subclasses ------------------------------------------------------------------

    @abstractmethod
    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path regex, handler) for each endpoint of the platform."""

    def authenticate(self, request: Request) -> None:
        """Raise ApiError when the request's credentials are not accepted (default: any)."""
        return None

    def error_body(self, status: int) -> Any:
        return {"message": HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "error"}

    def decorate(self, request: Request, reply: Reply) -> None:
        """Add headers every answer carries (rate-limit headers, request ids); default none."""
        return None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        if self._server is None:
            self._server = HttpServer(self._address, self, _RequestHandler)
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name=self.name, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- faults and inspection -------------------------------------------------------

    def fail_next(
        self,
        status: int = 0,
        *,
        count: int = 1,
        path_prefix: str | None = None,
        method: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        then_accept: bool = False,
        drop: bool = False,
    ) -> None:
        fault = _Fault(
            status, count, path_prefix, method, body, dict(headers or {}), delay, then_accept, drop
        )
        with self._lock:
            self._faults.append(fault)

    def calls(self, path_prefix: str | None = None, method: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if (path_prefix is None or r.path.startswith(path_prefix))
                and (method is None or r.method == method)
            ]

    # -- request handling ------------------------------------------------------------

    def handle(self, request: Request) -> Reply | None:
        """The answer, or None to drop the connection without one."""
        with self._lock:
            self.received.append(request)
        try:
            self.authenticate(request)
            fault = self._take_fault(request)
            reply = self._serve(request, fault)
        except ApiError as error:
            reply = error.reply()
        except Exception:
            logger.exception("%s failed on %s %s", self.name, request.method, request.path)
            reply = Reply(500, self.error_body(500))
        if reply is not None:
            self.decorate(request, reply)
        self._record(request, reply)
        return reply

    def _serve(self, request: Request, fault: _Fault | None) -> Reply | None:
        if fault is None:
            return self._dispatch(request)
        if fault.then_accept or fault.drop or fault.status < 400:
            try:
                real = self._dispatch(request)
            except ApiError as error:
                real = error.reply()
            time.sleep(fault.delay)
            if fault.drop:
                return None
            if fault.status < 400:
                return real
            return Reply(fault.status, self._fault_body(fault), dict(fault.headers), effect=real.effect)
        time.sleep(fault.delay)
        return Reply(fault.status, self._fault_body(fault), dict(fault.headers))

    def _fault_body(self, fault: _Fault) -> Any:
        return fault.body if fault.body is not None else self.error_body(fault.status)

    def _take_fault(self, request: Request) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(request.method, request.path):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def _dispatch(self, request: Request) -> Reply:
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(request.path)
            if match is not None and method == request.method:
                return handler(request, **match.groupdict())
        raise ApiError(404, self.error_body(404))

    def _record(self, request: Request, reply: Reply | None) -> None:
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            query=request.query,
            headers=request.headers,
            body=request.body,
            status=reply.status if reply is not None else 0,
            response=reply.body if reply is not None else None,
            effect=reply.effect if reply is not None else True,
            received_at=request.received_at,
        )
        with self._lock:
            self.requests.append(recorded)


# --- HTTP plumbing (shared with the other fakes: sandbox/_http.py) ------------------------


class _RequestHandler(KeepAliveHandler):
    server: HttpServer

    def _serve(self) -> None:
        received_at = time.time()
        headers = {name.lower(): value for name, value in self.headers.items()}
        length = min(int(headers.get("content-length") or 0), MAX_BODY_BYTES)
        raw = self.rfile.read(length) if length > 0 else b""
        path, _, query = self.path.partition("?")
        request = Request(
            self.command,
            path,
            parse_qs(query, keep_blank_values=True),
            headers,
            _body(headers, raw),
            received_at,
        )
        reply = self.server.fake.handle(request)
        if reply is None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._write(reply)

    def _write(self, reply: Reply) -> None:
        payload = json.dumps(reply.body, ensure_ascii=False).encode()
        phrase = (
            HTTPStatus(reply.status).phrase if reply.status in HTTPStatus._value2member_map_ else "Unknown"
        )
        lines = [
            f"HTTP/1.1 {reply.status} {phrase}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
        ]
        lines.extend(f"{name}: {value}" for name, value in reply.headers.items())
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + payload)
        except ConnectionError:
            self.close_connection = True  # the client gave up (a timeout during an injected delay)

    def log_message(self, format: str, *args: Any) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s " + format, self.address_string(), *args)


def _body(headers: dict[str, str], raw: bytes) -> Any:
    if not raw:
        return None
    kind = headers.get("content-type", "")
    if kind.startswith("application/x-www-form-urlencoded"):
        return {k: v[0] for k, v in parse_qs(raw.decode(), keep_blank_values=True).items()}
    try:
        return json.loads(raw)
    except ValueError:
        return None

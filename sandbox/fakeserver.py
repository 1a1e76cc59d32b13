"""The HTTP plumbing the fake Instagram, TikTok and HubSpot servers share.

Same approach as ``sandbox/line/``: served by the shared base of ``sandbox/http.py``, state
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

import json
import logging
import re
import threading
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from sandbox.http import HttpFake, HttpRequest, HttpResponse, json_response

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


class FakeServer(HttpFake):
    """Base of a fake platform: recording, faults, routing (lifecycle: HttpFake)."""

    name = "fake"
    max_body_bytes = MAX_BODY_BYTES

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.requests: list[RecordedRequest] = []
        self.received: list[Request] = []  # at arrival, before any injected delay (requests: when answered)
        self.clock: Callable[[], float] = time.time
        """Wall clock for expiries and rate windows; tests may replace it."""
        self._lock = threading.RLock()
        self._faults: list[_Fault] = []
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

    def clear_faults(self) -> None:
        """Drop the faults not yet used up."""
        with self._lock:
            self._faults.clear()

    def calls(self, path_prefix: str | None = None, method: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if (path_prefix is None or r.path.startswith(path_prefix))
                and (method is None or r.method == method)
            ]

    # -- request handling ------------------------------------------------------------

    def answer(self, request: HttpRequest) -> HttpResponse | None:
        reply = self.handle(_request(request))
        return None if reply is None else json_response(reply.status, reply.body, reply.headers)

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
            self.hold(fault.delay)
            if fault.drop:
                return None
            if fault.status < 400:
                return real
            return Reply(fault.status, self._fault_body(fault), dict(fault.headers), effect=real.effect)
        self.hold(fault.delay)
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


# --- HTTP: the shared base's request in, its response out ---------------------------------


def _request(http: HttpRequest) -> Request:
    body = _body(http.headers, http.body)
    return Request(http.method, http.path, http.query(), http.headers, body, http.received_at)


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

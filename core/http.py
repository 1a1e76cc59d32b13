"""Outbound HTTP: the one factory of clients (`http_client`), its libcurl engine, the TLS
context and the per-process cache of kept-alive clients."""

from __future__ import annotations

import io
import logging
import re
import ssl
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from json import dumps as json_dumps
from typing import ClassVar, Protocol
from urllib.parse import urlencode

import certifi
import httpx
import pycurl
from django.conf import settings

from core.db import connection_release
from core.redact import REDACT_FILTER, secrets_redact

# httpx logs each request's full URL at INFO ("HTTP Request: GET …?apiKey=…"): whatever level
# a deployment sets, its records and httpcore's print no Backlog API key.
for _name in ("httpx", "httpcore"):
    logging.getLogger(_name).addFilter(REDACT_FILTER)

# The CA file both engines verify with (certifi's), looked up once at import, in the
# process that forks the workers: not by each worker's first calls, several threads at once.
CA_BUNDLE = certifi.where()


@cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle is costly, and a new httpx client
    per delivery would otherwise pay it every time."""
    return httpx.create_ssl_context()


class Closable(Protocol):
    def close(self) -> None: ...


class ClientCache:
    """Kept-alive HTTP clients of one worker process, keyed by where they go and as whom.

    A delivery or push reuses the connection the previous one opened instead of opening
    (and the fake or real server accepting) a new one per call. Least recently used
    clients beyond `size` are closed.
    """

    every: ClassVar[list[ClientCache]] = []

    def __init__(self, factory: Callable[..., Closable], size: int = 32):
        self._factory = factory
        self._size = size
        self._clients: OrderedDict[tuple, Closable] = OrderedDict()
        self._lock = threading.Lock()
        ClientCache.every.append(self)

    @classmethod
    def clear_all(cls) -> None:
        """Close every cached client of this process (the engine setting changed: tests)."""
        for cache_ in cls.every:
            with cache_._lock:
                clients, cache_._clients = list(cache_._clients.values()), OrderedDict()
            for client in clients:
                client.close()

    def get(self, *key):
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._factory(*key)
                if len(self._clients) > self._size:
                    self._clients.popitem(last=False)[1].close()
            self._clients.move_to_end(key)
            return client


# -- the outbound client ----------------------------------------------------------------

MAX_ANSWER_BYTES = 32 * 1024 * 1024  # an answer beyond this is refused, not read into memory
IDLE_HANDLES = 8  # libcurl handles (each with its kept-alive connections) kept per client
USER_AGENT = "automedia/0.1"
_DECODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})
_UNSAFE = re.compile(r"[\r\n\x00]")


def http_client(*, base_url: str, headers: dict[str, str], timeout: float, transport=None):
    """The one way an outbound client is made: `request(method, url, params=, json=, data=,
    content=, headers=) -> httpx.Response` and `close()`, whichever engine serves it.

    OUTBOUND_HTTP_CLIENT picks the engine: "curl" (the default, `CurlClient`) or "httpx".
    An explicit httpx `transport`, and respx (which only sees httpx), need "httpx"."""
    if transport is not None or settings.OUTBOUND_HTTP_CLIENT == "httpx":
        return httpx.Client(
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            verify=ssl_context(),
            event_hooks={"request": [_before_call]},
        )
    return CurlClient(base_url=base_url, headers=headers, timeout=timeout)


def _before_call(request=None) -> None:
    """Before each call, both engines: a thread waiting on the network holds no pooled
    database connection (core/db.py)."""
    connection_release()


class CurlClient:
    """The part of httpx.Client automedia uses, on libcurl (pycurl), at a fraction of httpx's CPU.

    Answers are `httpx.Response`s and failures httpx's exceptions, so callers do not know
    which engine served them. Differences: `timeout` bounds the whole call (httpx: each
    phase); answers over MAX_ANSWER_BYTES fail (httpx: no bound); a GET whose kept-alive
    connection died without an answer is sent once more on a new one (a change never is:
    `_send_once`); HTTP/1.1 only, no redirects followed, http and https only. Handles are
    pooled, not tied to a thread: at most IDLE_HANDLES idle ones are kept."""

    def __init__(self, *, base_url: str, headers: dict[str, str], timeout: float):
        self._base = base_url.rstrip("/")
        self._headers = {"User-Agent": USER_AGENT, "Accept": "*/*", **headers}
        self._timeout_ms = max(1, round(timeout * 1000))
        self._idle: list[pycurl.Curl] = []
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self, method: str, url: str, *, params=None, json=None, data=None, content=None, headers=None
    ):
        target = self._url(url, params)
        body, content_type = _body(json=json, data=data, content=content)
        sent = {**self._headers, **(headers or {})}
        if content_type and not any(name.lower() == "content-type" for name in sent):
            sent["Content-Type"] = content_type
        if any(_UNSAFE.search(f"{name}{value}") for name, value in sent.items()):
            # libcurl would send a stored token's line break as is: a header of its own.
            raise httpx.LocalProtocolError("a header name or value holds a line break or NUL")
        answer = _Answer()
        _before_call()
        curl = self._take()
        try:
            _prepare(curl, method.upper(), target, body, sent, self._timeout_ms, answer)
            try:
                curl.perform()
            except pycurl.error as exc:
                raise _error(curl, exc) from None
            status = curl.getinfo(pycurl.RESPONSE_CODE)
        finally:
            self._give(curl)
        return httpx.Response(status, headers=answer.headers, content=b"".join(answer.chunks))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for curl in idle:
            curl.close()

    def _url(self, url: str, params) -> str:
        target = url if "://" in url else f"{self._base}/{url.lstrip('/')}"
        if not params:
            return target
        pairs = params.items() if isinstance(params, dict) else params
        query = urlencode([(name, _text(value)) for name, value in pairs])
        return f"{target}{'&' if '?' in target else '?'}{query}"

    def _take(self) -> pycurl.Curl:
        with self._lock:
            if self._closed:
                raise RuntimeError("the client has been closed")
            return self._idle.pop() if self._idle else pycurl.Curl()

    def _give(self, curl: pycurl.Curl) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_HANDLES:
                self._idle.append(curl)
                return
        curl.close()


class _Answer:
    __slots__ = ("chunks", "size", "headers")

    def __init__(self):
        self.chunks: list[bytes] = []
        self.size = 0
        self.headers: list[tuple[str, str]] = []

    def write(self, chunk: bytes) -> int:
        self.size += len(chunk)
        if self.size > MAX_ANSWER_BYTES:
            return 0  # libcurl ends the call with E_WRITE_ERROR
        self.chunks.append(chunk)
        return len(chunk)

    def header(self, line: bytes) -> None:
        if line.startswith(b"HTTP/"):
            self.headers = []  # a new answer (after a 100 Continue): its own headers only
            return
        name, colon, value = line.decode("latin-1").partition(":")
        if colon and name.strip().lower() not in _DECODED:
            self.headers.append((name.strip(), value.strip()))


def _prepare(curl, method: str, url: str, body: bytes | None, headers: dict, timeout_ms: int, answer) -> None:
    curl.reset()  # nothing of the previous call carries over; its connection does
    curl.setopt(pycurl.URL, url)
    curl.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    curl.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
    curl.setopt(pycurl.NOSIGNAL, 1)  # timeouts without SIGALRM: safe in threads
    curl.setopt(pycurl.TIMEOUT_MS, timeout_ms)
    curl.setopt(pycurl.CONNECTTIMEOUT_MS, timeout_ms)
    curl.setopt(pycurl.CAINFO, CA_BUNDLE)
    curl.setopt(pycurl.ACCEPT_ENCODING, "")  # every encoding libcurl decodes itself
    curl.setopt(pycurl.HTTPHEADER, [f"{name}: {value}" for name, value in headers.items()] + ["Expect:"])
    curl.setopt(pycurl.WRITEFUNCTION, answer.write)
    curl.setopt(pycurl.HEADERFUNCTION, answer.header)
    if method == "GET" and body is None:
        curl.setopt(pycurl.HTTPGET, 1)  # a GET may be sent again (libcurl does, see below)
    elif method == "HEAD":
        curl.setopt(pycurl.NOBODY, 1)
    else:
        _send_once(curl, method, body or b"")


def _send_once(curl, method: str, body: bytes) -> None:
    """A request that changes something is never sent twice by libcurl itself.

    When a kept-alive connection dies with no answer, libcurl sends the request again on a
    new one, rewinding its body (lib/transfer.c `Curl_retry_request`): right when the server
    closed an idle connection, wrong when it acted and then lost the answer (a publish made
    twice). So the body is read through a callback that cannot rewind: once any of it has
    gone out, the call fails (E_SEND_FAIL_REWIND, "may have reached the server") as it does
    with httpx. A request with no body at all has nothing to rewind, so it goes on a
    connection of its own."""
    curl.setopt(pycurl.POST, 1)
    if method != "POST":
        curl.setopt(pycurl.CUSTOMREQUEST, method)
    curl.setopt(pycurl.POSTFIELDSIZE_LARGE, len(body))
    if not body:
        curl.setopt(pycurl.FRESH_CONNECT, 1)
        curl.setopt(pycurl.FORBID_REUSE, 1)
        return
    curl.setopt(pycurl.READFUNCTION, io.BytesIO(body).read)
    curl.setopt(pycurl.SEEKFUNCTION, lambda offset, origin: pycurl.SEEKFUNC_CANTSEEK)


def _body(*, json, data, content) -> tuple[bytes | None, str]:
    if json is not None:
        text = json_dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode(), "application/json"
    if data is not None:
        return urlencode(data, doseq=True).encode(), "application/x-www-form-urlencoded"
    if content is not None:
        return (content.encode() if isinstance(content, str) else bytes(content)), ""
    return None, ""


def _text(value) -> str:
    """A query value as httpx writes it."""
    if value is True or value is False:
        return "true" if value else "false"
    return "" if value is None else str(value)


_NOT_CONNECTED = {
    pycurl.E_UNSUPPORTED_PROTOCOL,
    pycurl.E_URL_MALFORMAT,
    pycurl.E_COULDNT_RESOLVE_PROXY,
    pycurl.E_COULDNT_RESOLVE_HOST,
    pycurl.E_COULDNT_CONNECT,
    pycurl.E_SSL_CONNECT_ERROR,
    pycurl.E_PEER_FAILED_VERIFICATION,
    pycurl.E_SSL_CACERT_BADFILE,
}


def _error(curl, exc: pycurl.error) -> httpx.TransportError:
    """libcurl's failure as the httpx exception of the same meaning: ConnectError and
    ConnectTimeout only when nothing can have reached the server."""
    code, message = exc.args[0], secrets_redact(str(exc.args[1] if len(exc.args) > 1 else exc))
    if code == pycurl.E_OPERATION_TIMEDOUT:
        sent = curl.getinfo(pycurl.PRETRANSFER_TIME) > 0
        return (httpx.ReadTimeout if sent else httpx.ConnectTimeout)(message)
    if code in _NOT_CONNECTED:
        return httpx.ConnectError(message)
    if code == pycurl.E_WRITE_ERROR:
        return httpx.RemoteProtocolError(f"answer over {MAX_ANSWER_BYTES} bytes")
    if code == pycurl.E_SEND_ERROR:
        return httpx.WriteError(message)
    if code in (pycurl.E_GOT_NOTHING, pycurl.E_RECV_ERROR, pycurl.E_PARTIAL_FILE):
        return httpx.ReadError(message)
    if code == pycurl.E_SEND_FAIL_REWIND:  # the connection died after the body went out
        return httpx.RemoteProtocolError("the server closed the connection without an answer")
    return httpx.RemoteProtocolError(message)

"""A loopback server that answers what it was sent: the outbound HTTP engines' tests.

Paths: ``/echo…`` answers 200 with the request as JSON (method, path, query string,
headers, body) and any ``x-echo-status`` as its status; ``/slow`` waits ``x-echo-delay``
seconds first; ``/drop`` reads the request and closes the connection without an answer;
``/big`` answers ``x-echo-size`` bytes; ``/gzip`` answers a gzip-encoded JSON body. Each
request is recorded with the handler thread that served it: one thread per connection, so
two requests with one thread came on one kept-alive connection.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from dataclasses import dataclass

from sandbox.http import HttpFake, HttpRequest, HttpResponse, json_response


@dataclass(frozen=True, slots=True)
class Received:
    method: str
    path: str
    query_string: str
    headers: dict[str, str]
    body: bytes
    connection: int  # the serving thread's id: one per connection


class FakeEcho(HttpFake):
    name = "fake-echo"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.received: list[Received] = []
        self._lock = threading.Lock()

    def answer(self, request: HttpRequest) -> HttpResponse | None:
        with self._lock:
            self.received.append(
                Received(
                    request.method,
                    request.path,
                    request.query_string,
                    request.headers,
                    request.body,
                    threading.get_ident(),
                )
            )
        if request.path == "/drop":
            return None
        if request.path == "/slow":
            time.sleep(float(request.headers.get("x-echo-delay", "1")))
        if request.path == "/big":
            return HttpResponse(200, b"x" * int(request.headers.get("x-echo-size", "0")), "text/plain")
        if request.path == "/gzip":
            body = gzip.compress(json.dumps({"compressed": True}).encode())
            return HttpResponse(200, body, headers={"Content-Encoding": "gzip"})
        echoed = {
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
            "headers": request.headers,
            "body": request.body.decode("utf-8", "replace"),
        }
        status = int(request.headers.get("x-echo-status", "200"))
        return json_response(status, echoed, {"X-Echo": "1", "Set-Twice": "a"})

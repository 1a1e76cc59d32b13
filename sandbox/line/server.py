"""FakeLine: the channel of state.py served on loopback by the shared HTTP base.

Authentication, then injected faults (``fail_next``), then the endpoint (api.py); every
answer carries an ``x-line-request-id`` and is recorded in ``requests``.
"""

from __future__ import annotations

import json
import logging
import uuid

from sandbox.http import HttpFake, HttpRequest, HttpResponse, json_response
from sandbox.line.api import LineApi
from sandbox.line.page import received_page
from sandbox.line.records import (
    AUTH_FAILED,
    MAX_BODY_BYTES,
    LineError,
    LineReply,
    LineRequest,
    RecordedLineRequest,
)
from sandbox.line.state import LineChannel

logger = logging.getLogger(__name__)


class FakeLine(HttpFake, LineChannel):
    """A LINE channel in memory (LineChannel) answering the Messaging API on loopback."""

    name = "fake-line"
    max_body_bytes = MAX_BODY_BYTES

    def __init__(
        self,
        *,
        channel_tokens: set[str] | None = None,
        channel_secret: str = "",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        HttpFake.__init__(self, host=host, port=port)
        LineChannel.__init__(self, channel_tokens=channel_tokens, channel_secret=channel_secret)
        self._routes = LineApi(self)

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        if request.content_length > MAX_BODY_BYTES:
            return _closing(413, "Request Entity Too Large")
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            return _closing(411, "Length Required")
        return None

    def answer(self, request: HttpRequest) -> HttpResponse:
        if request.method == "GET" and request.path in ("", "/"):  # a person's browser
            body = received_page(self.sent()).encode()
            return HttpResponse(200, body, "text/html; charset=utf-8")
        line_request = LineRequest(
            request.method,
            request.path,
            request.query_string,
            request.headers,
            request.body,
            request.received_at,
        )
        if request.body:
            try:
                line_request.body = json.loads(request.body)
                line_request.parsed = True
            except ValueError:
                pass
        recorded, headers, hang = self._handle(line_request)
        if hang:
            self.hold(hang)  # recorded (and sent) already: a hang after acceptance
        return json_response(recorded.status, recorded.response, headers)

    def _handle(self, request: LineRequest) -> tuple[RecordedLineRequest, dict[str, str], float]:
        request_id = str(uuid.uuid4())
        try:
            response = self._serve(request, request_id)
        except LineError as error:
            response = error.response()
        except Exception:
            logger.exception("fake LINE failed on %s %s", request.method, request.path)
            response = LineReply(500, {"message": "Internal server error"})
        response.headers["x-line-request-id"] = request_id
        recorded = RecordedLineRequest(
            method=request.method,
            path=request.path,
            headers=request.headers,
            body=request.body,
            status=response.status,
            received_at=request.received_at,
            request_id=request_id,
            query=request.query(),
            accepted=response.accepted,
            response=response.body,
        )
        with self._lock:
            self.requests.append(recorded)
        return recorded, response.headers, response.hang

    def _serve(self, request: LineRequest, request_id: str) -> LineReply:
        self._authenticate(request.headers.get("authorization"))
        fault = self._take_fault(request.path) if self._faults else None
        if fault is None:
            return self._chaotic(request, request_id)
        if fault.then_accept:
            try:
                real = self._routes.dispatch(request, request_id)
            except LineError as error:
                real = error.response()
            self.hold(fault.delay)
            if fault.status < 400:
                return real
            replaced = fault.response()
            replaced.accepted = real.accepted
            return replaced
        self.hold(fault.delay)
        if fault.status < 400:
            return self._routes.dispatch(request, request_id)
        return fault.response()

    def _chaotic(self, request: LineRequest, request_id: str) -> LineReply:
        """The endpoint's answer, unless set_chaos draws a failure (500, nothing sent) or a
        hang (the real answer, held back after it is recorded); with a latency, every answer
        is held back that long after it is recorded."""
        outcome, hang_seconds = self._draw_chaos(request.path)
        if outcome == "fail":
            return LineReply(500, {"message": "Internal server error"})
        if outcome not in ("hang", "ok") or not hang_seconds:
            return self._routes.dispatch(request, request_id)
        try:
            reply = self._routes.dispatch(request, request_id)
        except LineError as error:  # a 409 for a retry key hangs as well
            reply = error.response()
        reply.hang = hang_seconds
        return reply

    def _authenticate(self, header: str | None) -> None:
        scheme, _, token = (header or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise LineError(401, AUTH_FAILED)
        if self.channel_tokens is not None and token not in self.channel_tokens:
            raise LineError(401, AUTH_FAILED)


def _closing(status: int, message: str) -> HttpResponse:
    response = json_response(status, {"message": message}, {"x-line-request-id": str(uuid.uuid4())})
    response.close = True
    return response

"""FakeBacklog: the space of state.py served on loopback by the shared HTTP base.

``/api/v2/…`` goes to the API (api.py), anything else to the HTML UI (ui.py); every
request is recorded in ``requests``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from urllib.parse import parse_qs

from sandbox.backlog.api import BacklogApi
from sandbox.backlog.records import RecordedRequest, error_body
from sandbox.backlog.routing import BacklogRequest, Params, json_answer
from sandbox.backlog.state import BacklogSpace
from sandbox.backlog.ui import BacklogUi
from sandbox.http import HttpFake, HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

FORM = "application/x-www-form-urlencoded"
# A real Backlog answers an API call in 150-300 ms (the range the team plans with, not a
# documented figure): the fake answers as slowly unless a test asks for speed (latency=0).
REAL_LATENCY = (0.15, 0.30)
Latency = float | tuple[float, float]


class FakeBacklog(HttpFake, BacklogSpace):
    """A Backlog space (BacklogSpace) with its API v2, HTML UI and webhooks on loopback."""

    name = "fake-backlog"

    def __init__(
        self,
        *,
        api_key: str = "test-api-key",
        host: str = "127.0.0.1",
        port: int = 0,
        webhook_mode: str = "collect",
        latency: Latency = REAL_LATENCY,
    ) -> None:
        HttpFake.__init__(self, host=host, port=port)
        BacklogSpace.__init__(self, api_key=api_key, webhook_mode=webhook_mode)
        self._api = BacklogApi(self)
        self._ui = BacklogUi(self)
        self._latency_random = random.Random()
        self._latency_lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # API calls answered at once, at most (latency makes them overlap)
        self.set_latency(latency)

    def set_latency(self, latency: Latency) -> None:
        """Every API call answers this many seconds after it arrived: a number, or a range
        (low, high) drawn from evenly per call; 0 answers at once. The wait runs outside the
        space's lock, so calls in flight together wait together as at Backlog."""
        low, high = (latency, latency) if isinstance(latency, int | float) else latency
        if low < 0 or high < low:
            raise ValueError("latency must be >= 0, a range as (low, high)")
        self.latency = (float(low), float(high))

    def _latency_wait(self) -> None:
        low, high = self.latency
        if high <= 0:
            return
        with self._latency_lock:
            wait = self._latency_random.uniform(low, high)
        time.sleep(wait)

    def started(self) -> None:
        if self._poster is not None:
            self._poster.start()

    def stopped(self) -> None:
        if self._poster is not None:
            self._poster.stop()

    def answer(self, request: HttpRequest) -> HttpResponse:
        key = request.headers.get("backlog-api-key")
        backlog_request = BacklogRequest(request.method, request.path, request.query(), _form(request), key)
        if not request.path.startswith("/api/"):
            return self._handle(backlog_request)
        with self._latency_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._latency_wait()
            return self._handle(backlog_request)
        finally:
            with self._latency_lock:
                self.in_flight -= 1

    def _handle(self, request: BacklogRequest) -> HttpResponse:
        try:
            api = request.path.startswith("/api/")
            if api and self.in_outage():
                response = json_answer(self.outage_status, error_body("Service Unavailable.", 1))
            else:
                response = (self._api if api else self._ui).handle(request)
        except Exception:
            logger.exception("fake Backlog failed on %s %s", request.method, request.path)
            response = json_answer(500, error_body("Internal error.", 1))
        recorded = RecordedRequest(
            request.method,
            request.path,
            request.query,
            request.form,
            response.status,
            api_key_header=request.api_key_header,
        )
        with self._lock:
            self.requests.append(recorded)
        return response


def _form(request: HttpRequest) -> Params:
    if not request.headers.get("content-type", "").startswith(FORM):
        return {}
    return parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)

"""FakeBacklog: the space of state.py served on loopback by the shared HTTP base.

``/api/v2/…`` goes to the API (api.py), anything else to the HTML UI (ui.py); every
request is recorded in ``requests``.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs

from sandbox.backlog.api import BacklogApi
from sandbox.backlog.records import RecordedRequest, error_body
from sandbox.backlog.routing import BacklogRequest, Params, json_answer
from sandbox.backlog.state import BacklogSpace
from sandbox.backlog.ui import BacklogUi
from sandbox.http import HttpFake, HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

FORM = "application/x-www-form-urlencoded"


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
    ) -> None:
        HttpFake.__init__(self, host=host, port=port)
        BacklogSpace.__init__(self, api_key=api_key, webhook_mode=webhook_mode)
        self._api = BacklogApi(self)
        self._ui = BacklogUi(self)

    def started(self) -> None:
        if self._poster is not None:
            self._poster.start()

    def stopped(self) -> None:
        if self._poster is not None:
            self._poster.stop()

    def answer(self, request: HttpRequest) -> HttpResponse:
        key = request.headers.get("x-api-key")
        return self._handle(
            BacklogRequest(request.method, request.path, request.query(), _form(request), key)
        )

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

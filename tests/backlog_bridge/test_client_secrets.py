"""The Backlog API key in no log line and no error, on both outbound engines (libcurl and
httpx, whose own logging prints each request's URL), for calls that fail."""

from __future__ import annotations

import logging
import socket

import pytest

from backlog_bridge.client import BacklogClient, BacklogError
from core.http import ClientCache
from sandbox.backlog import FakeBacklog

KEY = "k3y-never-printed-0123456789"


@pytest.fixture(params=["curl", "httpx"])
def engine(request, settings):
    ClientCache.clear_all()
    settings.OUTBOUND_HTTP_CLIENT = request.param
    yield request.param
    ClientCache.clear_all()


@pytest.fixture
def every_log_line(caplog):
    """Every record at DEBUG, httpx's and httpcore's included (the settings hold them at WARNING)."""
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="httpx"):
        with caplog.at_level(logging.DEBUG, logger="httpcore"):
            yield caplog


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("key_in", ["query", "header"])
def test_a_refused_key_shows_in_no_log_line_and_no_error(settings, engine, every_log_line, key_in):
    settings.BACKLOG_API_KEY_IN = key_in
    with FakeBacklog(api_key="the-right-key", latency=0) as fake:
        fake.add_project("ACME")
        with (
            BacklogClient(base_url=fake.base_url, api_key=KEY) as backlog,
            pytest.raises(BacklogError) as raised,
        ):
            backlog.update_issue("ACME-1", comment="x")
        logging.getLogger("automedia.test").exception("the call failed")

    assert (raised.value.status, raised.value.code) == (401, 11)
    assert KEY not in str(raised.value) and KEY not in repr(raised.value.args)
    assert every_log_line.records  # something was logged: the check below has teeth
    assert KEY not in every_log_line.text
    if engine == "httpx":  # httpx's own request line, redacted
        assert any("HTTP Request: PATCH" in r.getMessage() for r in every_log_line.records)


def test_a_call_that_reaches_no_server_shows_no_key(engine, every_log_line):
    base_url = f"http://127.0.0.1:{_closed_port()}"
    with BacklogClient(base_url=base_url, api_key=KEY) as backlog, pytest.raises(BacklogError) as raised:
        backlog.get_issue("ACME-1")
    logging.getLogger("automedia.test").error("failed", exc_info=raised.value)

    assert raised.value.status == 0
    assert KEY not in str(raised.value) and KEY not in str(raised.value.__cause__)
    assert KEY not in every_log_line.text

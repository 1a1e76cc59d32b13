"""The Backlog webhook token never appears in a log line or an error mail: Django's request
log, runserver's and gunicorn's access logs and ADMINS' mails print `/hooks/backlog/acme/****`."""

from __future__ import annotations

import logging
import runpy
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core import mail
from django.core.servers.basehttp import WSGIRequestHandler
from django.test import Client
from gunicorn.config import Config

from automedia_site.logmask import paths_mask
from automedia_site.reporting import MaskingExceptionReporter
from sandbox.stack import ROOT
from tests.helpers.backlog import load_fixture, post, webhook_url


class Lines(logging.Handler):
    """The formatted lines a logger's handlers would print (after the logger's filters)."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))


@pytest.fixture
def server_log():
    logger, lines = logging.getLogger("django.server"), Lines()
    logger.addHandler(lines)
    yield lines.lines
    logger.removeHandler(lines)


def test_it_masks_only_the_token_segment():
    assert paths_mask('"POST /hooks/backlog/acme/s3cr3t-_Tok?x=1 HTTP/1.1" 400') == (
        '"POST /hooks/backlog/acme/****?x=1 HTTP/1.1" 400'
    )
    assert paths_mask("Not Found: /hooks/line/acme") == "Not Found: /hooks/line/acme"


def test_it_masks_the_token_in_djangos_request_log(client, tenant, caplog):
    payload = load_fixture("backlog/issue_updated.json")
    payload["project"]["projectKey"] = "OTHER"  # a 400: `Bad Request: /hooks/backlog/acme/<token>`

    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert post(client, webhook_url(tenant), payload).status_code == 400
        assert post(client, f"/hooks/backlog/{tenant.slug}/guessed-token", payload).status_code == 404

    assert [r.getMessage() for r in caplog.records if r.name == "django.request"] == [
        f"Bad Request: /hooks/backlog/{tenant.slug}/****",
        f"Not Found: /hooks/backlog/{tenant.slug}/****",
    ]
    assert tenant.webhook_token not in caplog.text and "guessed-token" not in caplog.text


def test_it_masks_the_token_in_runservers_access_log(server_log, tenant):
    handler = WSGIRequestHandler.__new__(WSGIRequestHandler)  # what runserver logs per request
    handler.request, handler.requestline = None, f"POST {webhook_url(tenant)} HTTP/1.1"

    handler.log_request(200, 20)

    assert server_log == [f'"POST /hooks/backlog/{tenant.slug}/**** HTTP/1.1" 200 20']


def test_it_masks_the_token_in_gunicorns_access_and_error_logs(tmp_path):
    cfg = Config()
    cfg.set("accesslog", str(tmp_path / "access.log"))
    cfg.set("errorlog", str(tmp_path / "error.log"))
    logger = runpy.run_path(str(ROOT / "gunicorn.conf.py"))["logger_class"](cfg)
    path = "/hooks/backlog/acme/s3cr3t-token"
    environ = {
        "REQUEST_METHOD": "POST",
        "RAW_URI": path,
        "PATH_INFO": path,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "203.0.113.5",
    }
    resp = SimpleNamespace(status="200 OK", sent=20, headers=[])

    logger.access(resp, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=3))
    logger.error("Error handling request %s", path)

    access = (tmp_path / "access.log").read_text()
    assert '"POST /hooks/backlog/acme/**** HTTP/1.1" 200 20' in access
    assert "Error handling request /hooks/backlog/acme/****" in (tmp_path / "error.log").read_text()
    assert "s3cr3t" not in access + (tmp_path / "error.log").read_text()


def test_it_masks_the_token_in_the_error_mail_to_admins(tenant, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("event store exploded")

    monkeypatch.setattr("backlog_bridge.views.webhook_accept", broken)
    client = Client(raise_request_exception=False)

    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.status_code == 500
    [report] = mail.outbox
    assert report.subject.endswith(f"Internal Server Error: /hooks/backlog/{tenant.slug}/****")
    body = report.body + "".join(content for content, _ in report.alternatives)
    assert "event store exploded" in body  # the report itself is there…
    assert f"/hooks/backlog/{tenant.slug}/****" in body
    assert tenant.webhook_token not in body  # …without the token (path, URL, META, frame locals)
    assert tenant.webhook_token not in caplog.text


SECRET = "-".join(["s3cr3t", "key"])  # joined: a report quotes the source lines of its frames


def test_it_redacts_a_backlog_api_key_in_an_error_report():
    url = f"https://acme.backlog.jp/api/v2/users/myself?apiKey={SECRET}"  # frame locals, as the
    query = [("apiKey", SECRET), ("count", "1")]  # Backlog client's hold them
    headers = {"Backlog-API-Key": SECRET}
    try:
        raise RuntimeError(f"GET {url} {headers} failed")
    except RuntimeError as exc:
        reporter = MaskingExceptionReporter(None, type(exc), exc, exc.__traceback__)

    report = reporter.get_traceback_text() + reporter.get_traceback_html()
    assert "failed" in report and "apiKey=****" in report and query  # the report is there…
    assert SECRET not in report  # …without the key (message and frame locals)

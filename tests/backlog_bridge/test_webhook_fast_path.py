"""The webhook's fast path: no health-check round trip, a reconnect when the kept-alive
connection died, clear answers for bodies or a database it cannot use, and the browser
middleware left out."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.db import DataError, IntegrityError, OperationalError, connection, connections
from django.utils import translation

from backlog_bridge.models import BacklogEvent
from tests.helpers.backlog import load_fixture, post, webhook_url

pytestmark = pytest.mark.usefixtures("no_enqueue")
ON_POSTGRESQL = connection.vendor == "postgresql"


@pytest.fixture
def no_enqueue(monkeypatch):
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: None)


@pytest.fixture
def usable_calls(monkeypatch):
    """Calls of the connection's health check (`is_usable`), as a new request would make them."""
    wrapper = connections["default"]
    if wrapper.settings_dict.get("OPTIONS", {}).get("pool"):
        pytest.skip("PostgreSQL's connection pool: no health check per request (the pool drops broken ones)")
    assert wrapper.health_check_enabled  # CONN_HEALTH_CHECKS is on in the settings
    calls = []
    real = wrapper.is_usable
    monkeypatch.setattr(wrapper, "is_usable", lambda: calls.append(1) or real())
    return calls


@pytest.mark.django_db(transaction=True)
def test_it_stores_the_event_without_a_health_check_round_trip(client, tenant, usable_calls):
    post(client, webhook_url(tenant), load_fixture("backlog/issue_created.json"))  # the tenant is cached now
    usable_calls.clear()
    connection.health_check_done = False  # as at the start of each request on a kept connection

    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.json() == {"result": "accepted"}
    assert usable_calls == []
    assert BacklogEvent.objects.filter(activity_id=12).exists()
    # …whereas any other first query of a request is preceded by the check.
    connection.health_check_done = False
    BacklogEvent.objects.count()
    assert usable_calls == [1]


@pytest.mark.skipif(not ON_POSTGRESQL, reason="a SQLite connection cannot die while idle")
@pytest.mark.django_db(transaction=True)
def test_it_reconnects_once_when_the_kept_connection_died(client, tenant):
    post(client, webhook_url(tenant), load_fixture("backlog/issue_created.json"))  # the tenant is cached now
    pid = connection.connection.info.backend_pid
    admin = connection.settings_dict
    dsn = f"host={admin['HOST']} port={admin['PORT'] or 5432} user={admin['USER']} dbname=postgres"
    with psycopg.connect(dsn, autocommit=True) as other:  # as a PostgreSQL restart would
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    connection.health_check_done = False

    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.status_code == 200, response.content
    assert response.json() == {"result": "accepted"}
    assert connection.connection.info.backend_pid != pid
    assert BacklogEvent.objects.filter(activity_id=12).exists()


def test_it_answers_503_and_accepts_nothing_when_the_database_is_unreachable(client, tenant, monkeypatch):
    def unreachable(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("core.intake.row_insert_new", unreachable)

    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "not accepted" in response.json()["error"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_it_answers_400_for_non_json_numbers(client, tenant, constant):
    body = json.dumps(load_fixture("backlog/issue_updated.json"))
    body = body.replace('"id": 12', f'"id": 12, "score": {constant}', 1)

    response = post(client, webhook_url(tenant), body)

    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]
    assert not BacklogEvent.objects.exists()


@pytest.mark.parametrize("depth", [33, 100_000], ids=["past-the-limit", "past-pythons-recursion"])
def test_it_answers_400_for_json_nested_too_deep(client, tenant, depth):
    payload = load_fixture("backlog/issue_updated.json")
    body = json.dumps(payload).replace('"id": 12', '"id": 12, "x": ' + "[" * depth + "]" * depth, 1)

    response = post(client, webhook_url(tenant), body)

    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]
    assert not BacklogEvent.objects.exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [("年末\\u0000告知", "NUL"), ("年末\\ud800告知", "lone surrogate"), ("\\udfff", "lone surrogate")],
    ids=["nul", "high-surrogate", "low-surrogate"],
)
@pytest.mark.parametrize("where", ["value", "key"])
def test_it_refuses_text_no_database_can_store_on_every_database(client, tenant, text, reason, where):
    # PostgreSQL's jsonb refuses NUL (a DataError) and psycopg cannot encode a lone
    # surrogate (a UnicodeEncodeError, once a 500); SQLite took both: one answer for all.
    body = json.dumps(load_fixture("backlog/issue_updated.json"), ensure_ascii=False)
    member = f'"summary": "{text}"' if where == "value" else f'"{text}": 1'
    body = body.replace('"summary": "年末告知"', member, 1)

    response = post(client, webhook_url(tenant), body.encode())

    assert response.status_code == 400
    assert response.json()["error"].startswith("body refused: ") and reason in response.json()["error"]
    assert not BacklogEvent.objects.exists()


@pytest.mark.parametrize(
    "refusal",
    [
        DataError("value too long for type character varying(64)"),
        IntegrityError("CHECK"),
        UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"),
    ],
    ids=["data-error", "check-constraint", "unencodable"],
)
def test_it_answers_400_not_503_when_the_database_refuses_the_body_for_good(
    client, tenant, monkeypatch, refusal
):
    def refuse(*args, **kwargs):
        raise refusal

    monkeypatch.setattr("core.intake.row_insert_new", refuse)

    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.status_code == 400
    assert response.json()["error"].startswith("body cannot be stored: ")
    assert "Retry-After" not in response


def test_it_answers_json_whatever_the_sender_accepts(client, tenant):
    response = post(
        client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"), HTTP_ACCEPT="text/html"
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"result": "accepted"}


def test_the_browser_middleware_leave_webhooks_alone(client, tenant, admin_client):
    english = admin_client.get("/admin/", HTTP_ACCEPT_LANGUAGE="en")
    assert english["X-Frame-Options"] == "DENY" and "Accept-Language" in english["Vary"]

    response = post(
        client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"), HTTP_ACCEPT_LANGUAGE="en"
    )

    assert response.status_code == 200
    assert "X-Frame-Options" not in response and "Vary" not in response
    assert not response.cookies
    assert translation.get_language() == "ja"  # not the previous request's English


def test_it_answers_503_when_the_tenant_cannot_be_read(client, tenant, monkeypatch):
    def unreachable(slug):
        raise OperationalError("connection refused")

    monkeypatch.setattr("backlog_bridge.views._lookup", unreachable)

    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.status_code == 503
    assert "not accepted" in response.json()["error"]

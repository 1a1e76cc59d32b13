"""Shared fixtures: a fake Backlog on loopback, a named cast of factories, webhook pumping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.cache import cache

from backlog_bridge.views import _tenants
from deliveries.rendering import _resolved
from sandbox.backlog import FakeBacklog
from tests.factories import TenantFactory

pytest_plugins = ["tests.delivery_fixtures", "tests.channel_fixtures"]

FIXTURES = Path(__file__).parent / "fixtures"
API_KEY = "test-api-key"


def load_fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _clear_cache():
    for clear in (cache.clear, _tenants.clear, _resolved.clear):  # the per-process caches
        clear()
    yield
    for clear in (cache.clear, _tenants.clear, _resolved.clear):
        clear()


@pytest.fixture
def fake_backlog():
    with FakeBacklog(api_key=API_KEY, webhook_mode="collect") as fake:
        fake.add_project("ACME")
        yield fake


@pytest.fixture
def tenant(db, fake_backlog):
    return TenantFactory(
        slug="acme",
        backlog_base_url=fake_backlog.base_url,
        backlog_api_key=API_KEY,
        backlog_project_key="ACME",
        operators=["manager"],
    )


def comment_in_backlog(fake_backlog, issue_key: str, payload: dict, **kwargs) -> dict:
    """Let the fake hold the comment a recorded type-3 payload carries: automedia runs a
    comment only as Backlog reports it (re-read by its id). Returns the payload, its
    comment id now the fake's. The fake's own webhook for it is dropped."""
    comment = payload["content"]["comment"]
    added = fake_backlog.add_comment(issue_key, comment["content"], **kwargs)
    fake_backlog.outbox.pop()
    comment["id"] = added["id"]
    return payload


def webhook_url(tenant) -> str:
    return f"/hooks/backlog/{tenant.slug}/{tenant.webhook_token}"


@pytest.fixture
def pump(client, fake_backlog, django_capture_on_commit_callbacks):
    """Deliver the fake's webhooks to automedia, as Backlog would, until none are left.

    Webhooks automedia causes itself (its PATCHes and comments) are delivered too,
    so a test sees the whole conversation. Returns the HTTP responses.
    """

    def deliver(tenant) -> list:
        responses = []
        while fake_backlog.outbox:
            payload = fake_backlog.outbox.pop(0)
            with django_capture_on_commit_callbacks(execute=True):
                responses.append(
                    client.post(webhook_url(tenant), data=payload, content_type="application/json")
                )
        return responses

    return deliver

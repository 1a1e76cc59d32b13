"""Shared fixtures: the fakes on loopback (Backlog, LINE, Instagram, TikTok, HubSpot), a tenant,
webhook pumping, approved issues. Plain helpers are in tests/helpers/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from playwright.sync_api import Browser, Page, expect, sync_playwright

import core.holders
import core.keeper
from backlog_bridge.views import _tenants
from core.http import ClientCache
from core.timeutil import JST
from deliveries.channels.models import ChannelAccount
from deliveries.channels.template_store import _resolved
from deliveries.models import MessageTemplate
from sandbox.backlog import FakeBacklog
from sandbox.hubspot import FakeHubSpot
from sandbox.instagram import FakeInstagram
from sandbox.line import FakeLine
from sandbox.tiktok import FakeTikTok
from tests.helpers.backlog import API_KEY, body, webhook_url
from tests.helpers.browser import BANNER_SVG, BANNER_URL, CHROMIUM, CHROMIUM_ARGS
from tests.helpers.channels import (
    APPROVED_AT,
    HS_TOKEN,
    IG_TOKEN,
    TT_REFRESH,
    TT_TOKEN,
    channel_body,
    channel_template,
)
from tests.helpers.deliveries import approve_issue
from tests.helpers.factories import LineContactFactory, TenantFactory
from tests.helpers.waiting import STUCK_SECONDS


@pytest.fixture(autouse=True)
def _no_keeper_thread(monkeypatch):
    """Other connections cannot see a test's uncommitted rows: no keeper thread, batches
    run one row after another (tests that need real threads set core.keeper.THREADS)."""
    monkeypatch.setattr(core.keeper, "THREADS", False)
    yield
    core.keeper.keeper.drop(*core.keeper.keeper.held())


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """The process's claim holder (core/holders.py) keeps a PostgreSQL session of its own on
    the test database: it lets go before the database is dropped."""
    yield
    core.holders.current.release()


@pytest.fixture(autouse=True)
def _clear_cache():
    for clear in (cache.clear, _tenants.clear, _resolved.clear):  # the per-process caches
        clear()
    yield
    for clear in (cache.clear, _tenants.clear, _resolved.clear):
        clear()


@pytest.fixture
def httpx_engine(settings):
    """Outbound calls through httpx instead of libcurl: respx sees only httpx. Cached clients
    of the other engine are closed before and after."""
    ClientCache.clear_all()
    settings.OUTBOUND_HTTP_CLIENT = "httpx"
    yield
    ClientCache.clear_all()


@pytest.fixture
def fake_backlog():
    with FakeBacklog(api_key=API_KEY, webhook_mode="collect", latency=0) as fake:
        fake.add_project("ACME")
        yield fake


@pytest.fixture
def tenant(db, fake_backlog):
    return TenantFactory(
        slug="acme",
        backlog_base_url=fake_backlog.base_url,
        backlog_api_key=API_KEY,
        backlog_project_key="ACME",
        operators=["user:manager"],
    )


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


# -- LINE deliveries -------------------------------------------------------------------


@pytest.fixture
def line(settings):
    with FakeLine(channel_tokens={"line-channel-token"}) as fake:
        settings.LINE_API_BASE_URL = fake.base_url
        yield fake


@pytest.fixture
def template(db):
    return MessageTemplate.objects.create(
        name="announce_open",
        rev="r1",
        messages=[{"type": "text", "text": "{{ date }} の営業時間は {{ hours }} です"}],
    )


@pytest.fixture
def contacts(tenant):
    return [LineContactFactory(tenant=tenant, tags=["active"]) for _ in range(3)] + [
        LineContactFactory(tenant=tenant, tags=["active", "opt_out"]),
        LineContactFactory(tenant=tenant, tags=["active"], blocked=True),
    ]


@pytest.fixture
def approved(fake_backlog, tenant, pump, template, contacts, line):
    """An approved issue due at DUE, with its schedule registered."""

    def make(description: str = body()) -> str:
        return approve_issue(fake_backlog, pump, tenant, summary="年末告知", description=description)

    return make


# -- Instagram, TikTok, HubSpot --------------------------------------------------------------


@pytest.fixture
def instagram(settings):
    with FakeInstagram(tokens={IG_TOKEN}) as fake:
        settings.INSTAGRAM_GRAPH_BASE_URL = fake.base_url
        settings.INSTAGRAM_GRAPH_API_VERSION = "v25.0"
        yield fake


@pytest.fixture
def tiktok(settings):
    with FakeTikTok(client_key="sandbox-client-key", client_secret="sandbox-client-secret") as fake:
        settings.TIKTOK_API_BASE_URL = fake.base_url
        settings.TIKTOK_CLIENT_KEY, settings.TIKTOK_CLIENT_SECRET = fake.client_key, fake.client_secret
        fake.add_account("open-id-1", access_token=TT_TOKEN, refresh_token=TT_REFRESH)
        yield fake


@pytest.fixture
def hubspot(settings):
    with FakeHubSpot(tokens={HS_TOKEN}) as fake:
        settings.HUBSPOT_API_BASE_URL = fake.base_url
        yield fake


def _account(tenant, channel: str, **fields) -> ChannelAccount:
    return ChannelAccount.objects.create(tenant=tenant, channel=channel, **fields)


@pytest.fixture
def ig_account(tenant, instagram):
    return _account(
        tenant,
        "instagram",
        access_token=IG_TOKEN,
        ig_user_id=instagram.ig_user_id,
        expires_at=APPROVED_AT + timedelta(days=50),
        refreshed_at=APPROVED_AT - timedelta(days=10),
    )


@pytest.fixture
def tt_account(tenant, tiktok):
    return _account(
        tenant,
        "tiktok",
        access_token=TT_TOKEN,
        refresh_token=TT_REFRESH,
        open_id="open-id-1",
        expires_at=datetime(2026, 12, 31, tzinfo=JST),
    )


@pytest.fixture
def hs_account(tenant, hubspot):
    for n, tags in enumerate([["active"], ["active", "vip"], ["active", "opt_out"], ["inactive"]], 1):
        hubspot.add_contact(f"fan{n}@example.jp", tags)
    return _account(tenant, "hubspot", access_token=HS_TOKEN, hubspot_mode="note")


@pytest.fixture
def approve_channel(fake_backlog, tenant, pump):
    """An approved issue for `channel`, due at 2026-12-10 10:00 JST, with its schedule registered."""

    def make(channel: str, *, content: dict | None = None, body: str | None = None) -> str:
        if content is not False:
            channel_template(channel, content)
        return approve_issue(
            fake_backlog, pump, tenant, summary="新作告知", description=body or channel_body(channel)
        )

    return make


@pytest.fixture
def no_enqueue(monkeypatch):
    """django-q2 enqueues nothing: the test drains what it stored itself."""
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: None)


# -- Chromium for the browser tests (tests/helpers/browser.py) ------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make test` installs it (apt-get install chromium)"
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are
    # ordinary synchronous code all the same.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            yield chromium
            chromium.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser page; the test fails if the site's Content-Security-Policy refused
    anything on any page of it (Chromium reports each refusal on the console)."""
    context = browser.new_context(locale="ja-JP", viewport={"width": 1440, "height": 900})
    # Only a stuck page fails: a loaded machine renders slowly, never this slowly.
    context.set_default_timeout(STUCK_SECONDS * 1000)
    expect.set_options(timeout=STUCK_SECONDS * 1000)
    context.route(BANNER_URL, lambda route: route.fulfill(content_type="image/svg+xml", body=BANNER_SVG))
    refused: list[str] = []
    context.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    yield context.new_page()
    context.close()
    assert refused == []

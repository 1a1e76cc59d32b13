"""The cast of the managers' admin: two tenants on the fake Backlog, their managers and a viewer;
Chromium for the browser tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.utils import translation
from playwright.sync_api import Browser, Page, sync_playwright

from core.models import TenantMembership
from tests.helpers.backlog import API_KEY
from tests.helpers.browser import BANNER_SVG, BANNER_URL, CHROMIUM, CHROMIUM_ARGS
from tests.helpers.console import member
from tests.helpers.factories import TenantFactory


@pytest.fixture(autouse=True)
def _default_language():
    """A request in English leaves English active in the thread (LocaleMiddleware): not for the next test."""
    yield
    translation.deactivate()


@pytest.fixture
def other(db, fake_backlog):
    """A second tenant (project OTHER) on the same fake Backlog."""
    fake_backlog.add_project("OTHER")
    return TenantFactory(
        slug="other",
        name="他社事務所",
        backlog_base_url=fake_backlog.base_url,
        backlog_api_key=API_KEY,
        backlog_project_key="OTHER",
    )


@pytest.fixture
def manager(tenant):
    return member("yamada", tenant, TenantMembership.Role.MANAGER)


@pytest.fixture
def viewer(tenant):
    return member("sato", tenant, TenantMembership.Role.VIEWER)


@pytest.fixture
def other_manager(other):
    return member("suzuki", other, TenantMembership.Role.MANAGER)


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser("root", "root@example.jp", "pw")


@pytest.fixture
def as_manager(client, manager):
    client.force_login(manager)
    return client


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
    context = browser.new_context(locale="ja-JP", viewport={"width": 1440, "height": 900})
    context.set_default_timeout(10_000)
    context.route(BANNER_URL, lambda route: route.fulfill(content_type="image/svg+xml", body=BANNER_SVG))
    yield context.new_page()
    context.close()

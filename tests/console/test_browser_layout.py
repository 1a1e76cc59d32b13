"""The managers' busiest screens at 1366 × 900 in Chromium: every column fits in view.

A cell is clipped when it reaches past the box that shows it (the list's scrolling
`.results`, a dashboard section, the window); a short cell (a date, a kind, a name) that
wraps is as bad, since Japanese wraps anywhere and turns into text one character a line.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from core.models import TenantMembership
from line.models import LineSource
from tests.helpers.browser import LAPTOP, clipped_cells, manager_logged_in, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def laptop(page: Page, live_server, scene, tenant, other):  # noqa: F811
    """A manager of two tenants (so the tenant column shows) on a 1366 px screen."""
    user = manager_logged_in(page, live_server, tenant)
    TenantMembership.objects.create(user=user, tenant=other, role=TenantMembership.Role.MANAGER)
    page.set_viewport_size(LAPTOP)
    return page


def _assert_fits(page: Page, selector: str) -> None:
    assert clipped_cells(page, selector) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"]


def test_it_fits_every_column_of_the_task_list(laptop: Page, live_server):
    laptop.goto(f"{live_server.url}/admin/deliveries/contenttask/")
    for column in ("最後の試行", "テナント"):
        expect(laptop.locator("#result_list thead")).to_contain_text(column)
    _assert_fits(laptop, "#result_list th, #result_list td")
    shoot(laptop, "task-list")


def test_it_fits_the_line_groups_with_names_on_one_line_and_their_member_count(
    laptop: Page,
    live_server,
    scene,  # noqa: F811
):
    LineSource.objects.filter(pk=scene["group"].pk).update(member_count=6)
    laptop.goto(f"{live_server.url}/admin/line/linesource/")
    row = laptop.locator("#result_list tbody tr", has_text="タレント連絡グループ")
    expect(row.locator("td.field-member_count")).to_have_text("6")
    expect(row.locator(".am-id")).to_have_attribute("title", "C" + "a" * 32)
    _assert_fits(laptop, "#result_list th, #result_list td, #result_list label")
    shoot(laptop, "line-groups")


def test_it_keeps_the_dashboards_tables_readable_beside_the_recent_actions(laptop: Page, live_server):
    laptop.goto(f"{live_server.url}/admin/")
    expect(laptop.locator("#content-related")).to_be_visible()  # 最近行った操作
    expect(laptop.locator("#failures tbody tr")).not_to_have_count(0)
    _assert_fits(laptop, ".am-section th, .am-section td")

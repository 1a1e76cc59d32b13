"""A revoked Backlog key seen in Chromium: the 接続エラー row on the dashboard leads to the
tenant's 接続状況 page, where 「今すぐ確認」 after the fix clears it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from backlog_bridge.client import BacklogError, shared_client
from tests.helpers.browser import LAPTOP, manager_logged_in, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_revoked_key_leads_from_the_dashboard_to_the_connection_page(page: Page, live_server, tenant, line):
    tenant.backlog_api_key = "revoked-key"
    tenant.save()
    with pytest.raises(BacklogError):
        shared_client(tenant).get_issue("ACME-1")
    page.set_viewport_size(LAPTOP)
    manager_logged_in(page, live_server, tenant)

    row = page.locator("#attention tr[data-kind=connection]")
    expect(row).to_contain_text("接続エラー")
    expect(row).to_contain_text("API キーを受け付けません")
    row.locator("a").first.click()
    expect(page.locator("tr[data-platform=backlog]")).to_contain_text("接続できません")
    shoot(page, "connections")

    tenant.backlog_api_key = "test-api-key"
    tenant.save()
    page.click("#check-now")

    expect(page.locator("tr[data-platform=backlog]")).to_contain_text("OK")
    expect(page.locator("tr[data-platform=line]")).to_contain_text("OK")
    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("#attention tr[data-kind=connection]")).to_have_count(0)

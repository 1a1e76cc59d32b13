"""The admin's own pages in Chromium: Japanese only, readable settings, the task list at a
laptop's width, bulk actions with a confirmation page, the index grouped by what a manager does.

Playwright drives Debian's /usr/bin/chromium (fixtures: tests/console/conftest.py).
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from console.models import DeliveryOutcome
from deliveries.models import STATUS_DELIVERED, DeliveryAttempt
from tests.helpers.browser import PASSWORD, log_in, manager_logged_in, shoot
from tests.helpers.factories import ContentTaskFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ENGLISH_MODELS = (
    "Failed tasks",
    "Queued tasks",
    "Scheduled tasks",
    "Successful tasks",
    "Access attempts",
    "Access failures",
    "Access logs",
)


def superuser_logged_in(page: Page, live_server):
    get_user_model().objects.create_superuser("root", "root@example.jp", PASSWORD)
    log_in(page, live_server, "root")


@pytest.fixture
def delivered(tenant):
    task = ContentTaskFactory(
        tenant=tenant,
        issue_key="ACME-7",
        summary="配信済みの告知",
        channel="tiktok",
        status_name=STATUS_DELIVERED,
    )
    DeliveryAttempt.objects.create(
        tenant=tenant,
        task=task,
        approval_seq=1,
        channel="tiktok",
        endpoint="/v2/post/publish/video/init/",
        outcome="sent",
        status_code=200,
        duration_ms=412,
    )
    DeliveryOutcome.objects.create(
        tenant=tenant, task=task, kind=DeliveryOutcome.Kind.SENT, detail="delivered"
    )
    return task


def test_it_speaks_only_japanese_to_a_superuser_and_a_manager(page: Page, live_server, tenant, delivered):
    superuser_logged_in(page, live_server)
    for path in ("/admin/", "/admin/django_q/failure/"):
        page.goto(live_server.url + path)
        shown = page.locator("body").inner_text()
        assert [name for name in ENGLISH_MODELS if name.lower() in shown.lower()] == [], path
    expect(page.locator("#nav-sidebar")).to_contain_text("失敗したタスク")
    expect(page.locator("#nav-sidebar")).to_contain_text("ログイン保護")

    page.context.clear_cookies()
    manager_logged_in(page, live_server, tenant)
    page.goto(f"{live_server.url}/admin/deliveries/contenttask/{delivered.pk}/change/")
    heads = page.locator(".inline-group thead").inner_text()
    assert not re.search(r"APPROVAL|ENDPOINT|\(MS\)", heads, re.I), heads
    expect(page.locator(".inline-group thead")).to_contain_text("承認回数")
    expect(page.locator(".field-channel_label")).to_contain_text("TikTok")
    row = page.locator(".inline-group tbody tr.has_original").first
    expect(row).to_contain_text("送信済み (200)")
    expect(row).not_to_contain_text("sent 200")
    shoot(page, "task-detail")

    page.goto(f"{live_server.url}/admin/console/deliveryoutcome/")
    expect(page.locator("#result_list")).to_contain_text("配信済み")
    expect(page.locator("#result_list")).not_to_contain_text("delivered")

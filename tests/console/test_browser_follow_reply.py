"""友だち追加時の返信 in Chromium at 1366 × 900, as a manager: written as a text, an image and
a coupon of the account, refused on save where LINE would refuse it, and shown as the
bubbles a new friend sees once saved."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from line.models import LinePushSettings
from tests.helpers.browser import BANNER_URL, LAPTOP, manager_logged_in, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_manager_writes_the_follow_reply_and_sees_it_as_line_shows_it(
    page: Page, live_server, tenant, line
):
    tenant.preview_image_hosts = "example.jp"  # the banner is drawn at once, as on a tenant's page
    tenant.save()
    row = LinePushSettings.objects.create(tenant=tenant)
    coupon_id = line.add_coupon("友だち限定 10% オフ")
    manager_logged_in(page, live_server, tenant)
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/admin/line/linepushsettings/{row.pk}/change/")
    expect(page.locator("#push-preview")).to_have_count(0)  # no reply yet
    expect(page.locator("textarea[name=registration_messages]")).to_have_count(0)

    page.fill(
        "textarea[name=reply_text]",
        "友だち追加ありがとうございます！\n来店時にこのクーポンをお見せください。",
    )
    page.fill("input[name=reply_image_url]", BANNER_URL.replace("https://", "http://"))
    page.select_option("select[name=registration_coupon]", label="友だち限定 10% オフ")
    page.click("input[name=_continue]")
    expect(page.locator(".field-reply_image_url .errorlist")).to_contain_text("https で始まる URL")
    row.refresh_from_db()
    assert row.registration_messages == []

    page.fill("input[name=reply_image_url]", BANNER_URL)
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist")).to_be_visible()
    preview = page.locator("#push-preview")
    expect(preview.locator(".am-bubble[data-kind=text]")).to_contain_text("友だち追加ありがとうございます")
    expect(preview.locator(f".am-bubble[data-kind=image] img[src='{BANNER_URL}']")).to_be_visible()
    expect(preview.locator(".am-bubble[data-kind=coupon]")).to_contain_text("友だち限定 10% オフ")
    expect(preview).not_to_contain_text(coupon_id)
    shoot(page, "follow-reply")
    row.refresh_from_db()
    assert [m["type"] for m in row.registration_messages] == ["text", "image", "coupon"]

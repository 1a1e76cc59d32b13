"""Images in previews and the site's Content-Security-Policy: an image loads at once only over
https from a host the tenant allows, any other waits behind a button, and img-src reaches
only the site and the origins a page draws."""

from __future__ import annotations

from datetime import datetime

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.urls import reverse

from console.preview import bubble, post_card
from console.preview_images import collecting, image
from core.models import MAX_IMAGE_HOSTS, Tenant, validate_image_hosts
from core.timeutil import JST
from linepush.models import LinePushItem
from tests.helpers.backlog import body
from tests.helpers.console import mirrored_issue, task_url

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
FOREIGN = "https://tracker.example.net/pixel.png"
ALLOWED = "https://cdn.example.jp/banner.png"


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


def policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in header.split(";"))}


def previewed(client, fake_backlog, pump, tenant, url: str):
    description = body() + f"\n## 添付\n- 画像: {url}\n"
    task = mirrored_issue(fake_backlog, pump, tenant, description=description)
    return client.get(task_url("preview", task))


@pytest.mark.django_db
def test_every_admin_page_sends_a_content_security_policy(as_manager):
    response = as_manager.get(reverse("admin:index"))

    directives = policy(response)
    assert directives["img-src"] == ["'self'"]
    assert directives["script-src"] == ["'self'"] and directives["style-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]


def test_a_foreign_image_waits_for_the_managers_click(as_manager, fake_backlog, pump, tenant, template):
    response = previewed(as_manager, fake_backlog, pump, tenant, FOREIGN)

    page = response.content.decode()
    assert f'<img src="{FOREIGN}"' not in page
    assert f'<span class="am-image-held" data-src="{FOREIGN}"' in page
    assert "画像を表示" in page and "tracker.example.net" in page
    # the page's policy lets the click load that image, and no other outside one
    assert policy(response)["img-src"] == ["'self'", "https://tracker.example.net"]


def test_an_image_of_a_host_the_tenant_allows_loads_at_once(as_manager, fake_backlog, pump, tenant, template):
    Tenant.objects.filter(pk=tenant.pk).update(preview_image_hosts="other.example.jp\ncdn.example.jp\n")

    response = previewed(as_manager, fake_backlog, pump, tenant, ALLOWED)

    page = response.content.decode()
    assert f'<img src="{ALLOWED}"' in page and "am-image-held" not in page
    assert policy(response)["img-src"] == ["'self'", "https://cdn.example.jp"]


def test_a_plain_http_image_waits_even_from_an_allowed_host():
    drawn = bubble(
        {"type": "image", "originalContentUrl": "http://cdn.example.jp/a.png"}, frozenset({"cdn.example.jp"})
    )

    assert drawn["src"] == {"url": "http://cdn.example.jp/a.png", "host": "cdn.example.jp", "shown": False}


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "https://cdn.example.jp;script-src */a.png",
        "https://cdn.example.jp:99999/a.png",
        "https://[::1]/a.png",
    ],
)
def test_it_draws_no_image_that_is_not_a_plain_http_address(url):
    with collecting() as origins:
        drawn = image(url, frozenset({"cdn.example.jp"}))

    assert drawn is None and origins == set()  # nothing of it reaches the header


def test_a_post_cards_media_and_cover_wait_unless_allowed():
    card = post_card(
        "tiktok",
        {"photo_urls": [ALLOWED, FOREIGN], "cover_url": FOREIGN, "title": "t"},
        frozenset({"cdn.example.jp"}),
    )

    assert [m["src"]["shown"] for m in card["media"]] == [True, False]
    assert card["media"][0]["poster"]["shown"] is False


@pytest.mark.django_db
def test_a_group_posts_page_holds_a_foreign_image(as_manager, tenant):
    item = LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="Cgroup",
        trigger_type="escalation",
        payload=[{"type": "image", "originalContentUrl": FOREIGN, "previewImageUrl": FOREIGN}],
        dedupe_key="image-1",
        scheduled_at=NOW,
        status=LinePushItem.Status.WAITING_APPROVAL,
    )

    response = as_manager.get(reverse("admin:linepush_linepushitem_change", args=[item.pk]))

    page = response.content.decode()
    assert f'<img src="{FOREIGN}"' not in page and f'data-src="{FOREIGN}"' in page
    assert policy(response)["img-src"] == ["'self'", "https://tracker.example.net"]


def managers_post(tenant: Tenant, hosts: str) -> dict:
    return {
        "name": tenant.name,
        "quiet_hours_2": "Asia/Tokyo",
        "publish_time_policy": "invalidate",
        "preview_image_hosts": hosts,
    }


@pytest.mark.django_db
def test_a_manager_sets_the_hosts_and_a_wrong_one_is_named(as_manager, tenant):
    url = reverse("admin:core_tenant_change", args=[tenant.pk])

    refused = as_manager.post(url, managers_post(tenant, "https://cdn.example.jp/\n*.example.jp"))
    saved = as_manager.post(url, managers_post(tenant, "CDN.example.jp\n\nimg.example.com:8443"))

    assert refused.status_code == 200
    assert "「https://cdn.example.jp/」「*.example.jp」はホスト名ではありません" in refused.content.decode()
    assert saved.status_code == 302, saved.content.decode()[:2000]
    tenant.refresh_from_db()
    assert tenant.image_hosts() == {"cdn.example.jp", "img.example.com:8443"}


@pytest.mark.django_db
def test_a_viewer_cannot_set_the_hosts(client, viewer, tenant):
    client.force_login(viewer)

    client.post(
        reverse("admin:core_tenant_change", args=[tenant.pk]), managers_post(tenant, "cdn.example.jp")
    )

    tenant.refresh_from_db()
    assert tenant.preview_image_hosts == ""


def test_it_takes_at_most_so_many_hosts():
    validate_image_hosts("\n".join(f"img{n}.example.jp" for n in range(MAX_IMAGE_HOSTS)))
    with pytest.raises(ValidationError, match="ホストは 50 件までです"):
        validate_image_hosts("\n".join(f"img{n}.example.jp" for n in range(MAX_IMAGE_HOSTS + 1)))

"""Every page a manager can open, in Chromium: plain Japanese, no English word and no raw JSON.

The crawl starts at the admin's index and follows every link of the admin a manager is
shown, one page per kind of address (a change page of one row stands for all of its rows);
names of the platforms and the product, and the scene's own data (issue keys, URLs, user
names), are not English a manager has to read.
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import Page

from backlog_bridge.models import AIReview, CommandRun
from console.models import AttentionNotice, LineTestRecipient, NoticeSettings
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import ContentTask
from line.models import LineCoupon, LineSurveyRule, LineWebhookEvent
from linepush.models import LinePushProblem, LineTriggerPolicy
from tests.helpers.browser import LAPTOP, manager_logged_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Names a manager knows as they are: the platforms, their products and the words their own
# Japanese screens use (Backlog's and LINE's settings say "Webhook"), the units they count in.
NAMES = {
    "LINE",
    "Backlog",
    "Instagram",
    "TikTok",
    "HubSpot",
    "automedia",
    "Webhook",
    "https",
    "HTTP",
    "CRM",
    "Official",
    "Account",
    "Manager",
    "JST",
    "URL",
    "API",
    "ID",
    "CSV",
    "JPEG",
    "PNG",
    "MB",
    "KB",
    "ms",
    "OK",
    "NG",
    "p99",
}
# Not words: addresses, host names, mail addresses, issue keys, ids (whole, shortened or the tail of a
# masked secret), numbers with units, time zones, and the comment commands managers write in
# Backlog (`/automedia preview template=…`), whole.
NOT_WORDS = re.compile(
    r"https?://\S+|[\w.+-]+@[\w.-]+|\b[A-Z][A-Z0-9_]*-\d+\b|\b\w*\d\w*\b|\b[A-Za-z0-9]{20,}\b"
    r"|\w+…\w+|•+\S+|\b[A-Z][a-z]+/[A-Z][A-Za-z_]+\b|/automedia [^\n\t]*|\b[\w.-]+\.(?:jp|com|net|org)\b"
)
WORD = re.compile(r"[A-Za-z][A-Za-z']{2,}")
RAW_JSON = re.compile(r'\{\s*"[^"]+"\s*:|\[\s*\{\s*"')
SKIPPED = re.compile(r"/logout/|/delete/|/password_change/|/jsi18n/|/export|\.csv$")


def english_words(text: str, data: set[str]) -> list[str]:
    words = {w for w in WORD.findall(NOT_WORDS.sub(" ", text))}
    names = {n.lower() for n in NAMES}  # the index shows app names in capitals
    return sorted(w for w in words if w.lower() not in names and w.lower() not in data)


def page_kind(path: str) -> str:
    """One address per kind of page: the ids of rows do not make another kind."""
    return re.sub(r"/\d+/", "/N/", path)


def crawl(page: Page, base: str, data: set[str]) -> dict[str, list[str]]:
    seen, queue, found = set(), ["/admin/"], {}
    while queue:
        path = queue.pop(0)
        kind = page_kind(urlsplit(path).path) + ("?" + urlsplit(path).query if "view=" in path else "")
        if kind in seen:
            continue
        seen.add(kind)
        response = page.goto(base + path)
        if response is None or "text/html" not in response.headers.get("content-type", ""):
            continue
        assert response.status < 400, f"{path}: {response.status}"
        text = page.locator("body").inner_text()
        problems = english_words(text, data)
        problems += [f"raw JSON: {m.group(0)}" for m in RAW_JSON.finditer(text)]
        if problems:
            found[path] = problems
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))"):
            parts = urlsplit(href)
            if parts.netloc or not parts.path.startswith("/admin/") or SKIPPED.search(parts.path):
                continue
            query = f"?{parts.query}" if "view=" in parts.query else ""
            queue.append(parts.path + query)
    assert len(seen) > 40, sorted(seen)  # the crawl reached the pages, not only the index
    return found


@pytest.fixture
def records(tenant) -> None:
    """A row of each record the scene leaves empty, so its page is scanned too."""
    LineWebhookEvent.objects.create(
        tenant=tenant,
        webhook_event_id="01HZXAMPLE0000000000000000",
        type="follow",
        payload={"type": "follow", "source": {"type": "user", "userId": "U" + "2" * 32}},
        outcome="processed",
    )
    CommandRun.objects.create(
        tenant=tenant,
        issue_key="ACME-1",
        comment_id=7,
        verb="preview",
        args={"template": "announce_open"},
        user={"id": 1, "userId": "manager", "name": "山田"},
        result="scheduled at 2026-12-10T10:00:00+09:00",
    )
    AIReview.objects.create(
        tenant=tenant, issue_key="ACME-1", model="claude-sonnet-4-5", ok=True, text="読みやすい告知です。"
    )
    LineSurveyRule.objects.create(tenant=tenant, name="来店希望", pattern="来店", add_tags=["visit"])
    LineTriggerPolicy.objects.create(tenant=tenant, trigger_type="reminder", requires_approval=False)
    now = timezone.now()
    LineCoupon.objects.create(
        tenant=tenant,
        coupon_id="01JCOUPON0000000000000000",
        title="来店 10% オフ",
        price="percentage",
        amount=10,
        starts_at=now,
        ends_at=now + timedelta(days=30),
    )
    ChannelAccount.objects.create(tenant=tenant, channel="tiktok", access_token="act.example", open_id="o1")
    ChannelAccount.objects.create(
        tenant=tenant, channel="instagram", access_token="IGQ.example", ig_user_id="1789"
    )
    ChannelPost.objects.create(
        tenant=tenant,
        task=ContentTask.objects.filter(tenant=tenant).first(),
        approval_seq=1,
        channel="tiktok",
        publish_id="v_pub_url~v2.123",
    )
    LineTestRecipient.objects.create(tenant=tenant, name="山田のスマホ", user_id="U" + "3" * 32)
    NoticeSettings.objects.create(tenant=tenant, via="line", line_to="C" + "a" * 32)
    AttentionNotice.objects.create(
        tenant=tenant,
        key="task:1",
        text="ACME-3 が配信エラーです",
        url="/admin/deliveries/contenttask/1/change/",
    )
    LinePushProblem.objects.create(
        tenant=tenant,
        trigger_type="reminder",
        source_table="content_task",
        source_id="ACME-1",
        error="連絡グループ「営業」が見つかりません",
        last_seen_at=now,
    )


def test_no_page_a_manager_can_open_shows_english_or_raw_json(
    page: Page, live_server, scene, records, tenant, other, fake_backlog
):
    manager_logged_in(page, live_server, tenant)
    page.set_viewport_size(LAPTOP)
    # The scene's own data: user and tenant names, a template's name, the variables and
    # audience tags its issue body sets.
    data = {
        tenant.slug,
        other.slug,
        "yamada",
        "announce",
        "open",
        "date",
        "hours",
        "tag",
        "active",
        "opt",
        "out",
        "tags",  # the HubSpot property holding the tags (`automedia_tags`)
    }

    found = crawl(page, live_server.url, data)

    assert found == {}, "\n".join(f"{path}: {', '.join(words)}" for path, words in found.items())

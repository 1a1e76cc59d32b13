"""The demo of `make run` shows the whole product: seeded LINE groups and posts, the fake
LINE's received messages as a page, the fake Backlog's body editing, a demo issue due at
least three minutes ahead with its time printed. Browser parts: Playwright in Chromium."""

from __future__ import annotations

import io
from datetime import datetime

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import Page, expect

from console.models import LineTestRecipient
from core.models import Tenant, TenantMembership
from core.timeutil import JST
from deliveries.channels.models import ChannelAccount
from line.models import LineSource
from linepush.models import LinePushItem
from sandbox.backlog import FakeBacklog
from sandbox.demo import Sandbox, demo_publish_at
from sandbox.line import FakeLine
from tests.helpers.browser import PASSWORD, log_in

TOKEN = "sandbox-line-token"


@pytest.mark.parametrize(
    ("now", "due"),
    [
        (datetime(2026, 12, 5, 10, 0, 30, tzinfo=JST), datetime(2026, 12, 5, 10, 4, tzinfo=JST)),
        (datetime(2026, 12, 5, 10, 0, 0, tzinfo=JST), datetime(2026, 12, 5, 10, 3, tzinfo=JST)),
        (datetime(2026, 12, 5, 10, 0, 59, 999999, tzinfo=JST), datetime(2026, 12, 5, 10, 4, tzinfo=JST)),
    ],
)
def test_it_makes_the_demo_issue_due_at_least_three_minutes_ahead(now, due):
    assert demo_publish_at(now) == due


@pytest.fixture
def demo_line(settings):
    with FakeLine(channel_tokens={TOKEN}, channel_secret="sandbox-line-secret") as line:
        settings.LINE_API_BASE_URL = line.base_url
        line.channel.http_hosts = frozenset({"127.0.0.1"})
        yield line


@pytest.mark.django_db
def test_it_prints_the_demo_issues_time(settings, demo_line):
    call_command("seed_demo", stdout=io.StringIO())
    tenant = Tenant.objects.get(slug="demo")
    out = io.StringIO()
    with FakeBacklog(api_key=tenant.backlog_api_key) as fake:
        Sandbox(out=out, err=io.StringIO())._wire(fake, tenant, "http://127.0.0.1:8000")
        issue = fake.issue("DEMO-1")
    when = next(line for line in issue["description"].splitlines() if "投稿日時" in line)
    printed = out.getvalue()
    assert "DEMO-1" in printed and when.split(": ", 1)[1].split(" (")[0] in printed, (printed, when)


@pytest.mark.django_db
def test_it_prints_the_demo_issues_time_again_last(settings, demo_line):
    call_command("seed_demo", stdout=io.StringIO())
    tenant = Tenant.objects.get(slug="demo")
    out = io.StringIO()
    sandbox = Sandbox(out=out, err=io.StringIO())
    with FakeBacklog(api_key=tenant.backlog_api_key) as fake:
        sandbox._wire(fake, tenant, "http://127.0.0.1:8000")
        sandbox._write("偽の Backlog: …")
        sandbox._due_summary()
        when = next(line for line in fake.issue("DEMO-1")["description"].splitlines() if "投稿日時" in line)
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("▶ デモ課題 DEMO-1 の投稿日時: ") and when.split(": ", 1)[1].split(" (")[0] in last
    assert last.count("JST") == 1


@pytest.mark.django_db
def test_it_seeds_a_manager_printed_with_the_admin(settings, demo_line):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)

    tenant = Tenant.objects.get(slug="demo")
    manager = get_user_model().objects.get(username="manager")
    membership = TenantMembership.objects.get(user=manager)
    assert (membership.tenant, membership.role) == (tenant, TenantMembership.Role.MANAGER)
    assert not manager.is_superuser
    printed = out.getvalue()
    assert "ユーザー: manager  パスワード: " in printed and "ユーザー: admin  パスワード: " in printed
    assert LineTestRecipient.objects.filter(tenant=tenant).exists()  # テスト配信 works in the tour


@pytest.mark.django_db
def test_it_makes_a_project_as_backlog_makes_it_ready_through_setup_tenant(settings, demo_line):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:9"  # check_connections' URLs: the one set up
    call_command("seed_demo", stdout=io.StringIO())
    tenant = Tenant.objects.get(slug="demo")
    ChannelAccount.objects.filter(tenant=tenant).delete()  # the platforms' fakes: test_fake_platforms
    out = io.StringIO()
    sandbox = Sandbox(out=out, err=io.StringIO())
    with FakeBacklog(api_key=tenant.backlog_api_key) as fake:
        Tenant.objects.filter(pk=tenant.pk).update(backlog_base_url=fake.base_url)
        tenant.refresh_from_db()
        sandbox._wire(fake, tenant, "http://127.0.0.1:9")
        sandbox._checks()
        project = fake._projects[tenant.backlog_project_key]
        hooks = [h["hookUrl"] for h in project.webhooks]
    printed = out.getvalue()
    assert "demo: Backlog: 追加しました: 状態「automedia承認」" in printed
    assert "demo: Backlog: 追加しました: automedia への Webhook" in printed
    assert "demo: LINE: Webhook URL を設定しました。" in printed
    assert hooks == [f"http://127.0.0.1:9/hooks/backlog/demo/{tenant.webhook_token}"]
    assert demo_line.channel.webhook_endpoint == "http://127.0.0.1:9/hooks/line/demo"
    assert (
        "接続確認（manage.py check_connections" in printed
        and "  demo:\n    backlog: OK\n    line: OK" in printed
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_seeds_line_groups_and_posts_that_the_admin_shows(page: Page, live_server):
    call_command("seed_demo", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())  # twice: nothing doubles
    admin = get_user_model().objects.get(username="admin")
    admin.set_password(PASSWORD)
    admin.save()
    tenant = Tenant.objects.get(slug="demo")
    assert LineSource.objects.filter(tenant=tenant).count() == 2
    assert sorted(LinePushItem.objects.filter(tenant=tenant).values_list("status", flat=True)) == [
        LinePushItem.Status.FAILED,
        LinePushItem.Status.WAITING_APPROVAL,
    ]
    log_in(page, live_server, "admin")

    expect(page.locator("#card-waiting")).to_have_text("1")
    expect(page.locator("#attention tr[data-kind=push_failed]")).to_contain_text("タレント連絡グループ")
    page.goto(f"{live_server.url}/admin/console/pushapproval/")
    expect(page.locator("#result_list")).to_contain_text("配信前チェック")
    page.goto(f"{live_server.url}/admin/line/linesource/")
    expect(page.locator("#result_list")).to_contain_text("撮影チーム")


@pytest.mark.browser
def test_it_shows_the_fake_lines_received_messages_as_a_page(page: Page):
    with FakeLine(channel_tokens={TOKEN}) as line:
        page.goto(line.base_url)
        expect(page.locator("#none")).to_be_visible()
        httpx.post(
            f"{line.base_url}/v2/bot/message/push",
            headers={"Authorization": f"Bearer {TOKEN}"},
            json={"to": "U" + "1" * 32, "messages": [{"type": "text", "text": "年末セールのお知らせ"}]},
        ).raise_for_status()
        page.goto(line.base_url)
        expect(page.locator("#received")).to_contain_text("年末セールのお知らせ")
        expect(page.locator("body")).not_to_contain_text("Authentication failed")


@pytest.mark.browser
def test_it_edits_an_issue_body_in_the_fake_backlog(page: Page):
    with FakeBacklog(api_key="k") as fake:
        fake.add_project("DEMO")
        fake.create_issue(
            "DEMO", summary="告知", description="## 配信メタ\n- チャネル: LINE\n", status="処理中"
        )
        fake.outbox.clear()
        page.goto(f"{fake.base_url}/ui/issues/DEMO-1")
        page.fill("#description-form textarea", "## 配信メタ\n- チャネル: Instagram\n")
        page.click("#description-form button")
        expect(page.locator("#description-form textarea")).to_have_value(
            "## 配信メタ\n- チャネル: Instagram\n"
        )
        assert fake.issue("DEMO-1")["description"] == "## 配信メタ\n- チャネル: Instagram\n"
        assert len(fake.outbox) == 1  # the webhook of the edit, as Backlog would send it

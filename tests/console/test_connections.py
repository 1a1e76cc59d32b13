"""The 接続状況 page (role and tenant checked), 「今すぐ確認」, the setup button, the admin's
checks when a tenant or an account is saved, and a refusal at run time on 要対応."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from backlog_bridge.client import BacklogError, shared_client
from console.attention import CONNECTION, attention_list
from core.models import Connection, TenantMembership
from deliveries.channels.models import ChannelAccount
from deliveries.channels.registry import channel_part
from deliveries.channels.token_upkeep import token_expired_notice
from tests.helpers.console import change_url, member, messages_of, tenant_form

pytestmark = pytest.mark.django_db


def page_url(tenant) -> str:
    return reverse("admin:core_tenant_connections", args=[tenant.pk])


def check_url(tenant) -> str:
    return reverse("admin:core_tenant_connections_check", args=[tenant.pk])


def setup_url(tenant) -> str:
    return reverse("admin:core_tenant_connections_setup", args=[tenant.pk])


@pytest.fixture
def as_viewer(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def as_superuser(client, superuser):
    client.force_login(superuser)
    return client


def test_a_viewer_reads_the_page_but_has_no_check_button(as_viewer, tenant, line):
    Connection.objects.create(tenant=tenant, platform="backlog", ok=True, checked_at=timezone.now())

    page = as_viewer.get(page_url(tenant)).content.decode()

    assert "接続状況" in page and 'data-platform="backlog"' in page and 'data-platform="line"' in page
    assert "未確認" in page  # LINE: never checked
    assert 'id="check-now"' not in page and 'id="setup-now"' not in page
    assert as_viewer.post(check_url(tenant)).status_code == 403


def test_a_manager_checks_now_and_reads_each_result(as_manager, tenant, line):
    response = as_manager.post(check_url(tenant), follow=True)

    assert "すべての接続を確認しました。" in messages_of(response)
    page = response.content.decode()
    assert page.count('class="connection-ok"') == 2 and "API キーのユーザー: automedia（管理者）" in page
    assert 'id="setup-now"' not in page  # setup changes the integration: superusers only


def test_another_tenants_manager_sees_nothing(client, tenant, other_manager):
    client.force_login(other_manager)

    assert client.get(page_url(tenant)).status_code == 404
    assert client.post(check_url(tenant)).status_code == 404


def test_only_a_superuser_runs_the_setup_from_the_page(as_manager, tenant, line):
    assert as_manager.post(setup_url(tenant)).status_code == 403


def test_a_superuser_sets_up_a_bare_project_from_the_page(as_superuser, tenant, fake_backlog, line):
    fake_backlog.add_project("BARE", statuses=[(1, "未対応")], custom_fields=())
    tenant.backlog_project_key = "BARE"
    tenant.save()
    line.channel.http_hosts = frozenset({"127.0.0.1"})

    page = as_superuser.post(setup_url(tenant)).content.decode()

    assert "Backlog: 追加しました: 状態「automedia承認」" in page
    assert "LINE: Webhook URL を設定しました。" in page
    assert {s["name"] for s in fake_backlog._projects["BARE"].statuses} >= {
        "automedia承認",
        "automediaエラー",
    }


def test_a_key_refused_at_run_time_is_on_the_attention_list_until_a_check_passes(
    as_manager, tenant, manager, line
):
    tenant.backlog_api_key = "revoked-key"
    tenant.save()
    with pytest.raises(BacklogError):
        shared_client(tenant).get_issue("ACME-1")

    [row] = [a for a in attention_list(user=manager, now=timezone.now()).rows if a.kind == CONNECTION]
    assert row.label == "接続エラー" and "API キーを受け付けません" in row.reason
    assert row.url == page_url(tenant)

    tenant.backlog_api_key = "test-api-key"
    tenant.save()
    as_manager.post(check_url(tenant))
    assert not [a for a in attention_list(user=manager, now=timezone.now()).rows if a.kind == CONNECTION]


def test_a_connection_row_is_seen_only_by_members_of_its_tenant(tenant, other, other_manager):
    Connection.objects.create(tenant=tenant, platform="line", ok=False, problem="x", failed_at=timezone.now())

    assert not attention_list(user=other_manager, now=timezone.now()).rows


def test_saving_a_wrong_api_key_in_the_admin_is_refused_naming_it(as_superuser, tenant, line):
    form = tenant_form(tenant, backlog_api_key="wrong-key", skip_connection_check="")

    response = as_superuser.post(change_url(tenant), form)

    assert response.status_code == 200 and "API キーを受け付けません" in response.content.decode()
    tenant.refresh_from_db()
    assert tenant.backlog_api_key == "test-api-key"


def test_a_superuser_may_save_without_the_check_and_is_warned(as_superuser, tenant, line):
    form = tenant_form(tenant, backlog_api_key="new-key")

    response = as_superuser.post(change_url(tenant), form, follow=True)

    assert "接続を確認せずに保存しました。「接続状況」で確認してください。" in messages_of(response)
    tenant.refresh_from_db()
    assert tenant.backlog_api_key == "new-key"


def test_a_checked_save_keeps_its_results(as_superuser, tenant, line):
    form = tenant_form(tenant, backlog_api_key="test-api-key", line_channel_token="line-channel-token")
    form["skip_connection_check"] = ""
    tenant.line_channel_token = "old-token"
    tenant.save()

    assert as_superuser.post(change_url(tenant), form).status_code == 302
    assert set(Connection.objects.filter(tenant=tenant, ok=True).values_list("platform", flat=True)) == {
        "backlog",
        "line",
    }


def test_saving_an_account_the_platform_refuses_is_refused(as_superuser, tenant, instagram):
    form = {
        "tenant": str(tenant.pk),
        "channel": "instagram",
        "access_token": "not-a-token",
        "refresh_token": "",
        "ig_user_id": instagram.ig_user_id,
        "hubspot_mode": "note",
        "hubspot_tag_property": "automedia_tags",
    }

    response = as_superuser.post(reverse("admin:deliveries_channelaccount_add"), form)

    assert response.status_code == 200 and "Instagram がトークンを受け付けません" in response.content.decode()
    assert not ChannelAccount.objects.exists()


def test_the_tenant_list_links_each_tenant_to_its_connections(as_superuser, tenant):
    page = as_superuser.get(reverse("admin:core_tenant_changelist")).content.decode()

    assert page_url(tenant) in page


def test_a_viewer_membership_is_what_the_page_asks(client, tenant, line):
    user = member("kato", tenant, TenantMembership.Role.VIEWER)
    client.force_login(user)

    assert client.get(page_url(tenant)).status_code == 200


def test_a_line_token_refused_while_sending_is_on_the_attention_list(tenant, manager):
    channel_part("line", "tokens").token_expired(tenant=tenant, issue_key="ACME-1", reason="401")

    [row] = [a for a in attention_list(user=manager, now=timezone.now()).rows if a.kind == CONNECTION]
    assert "チャネルアクセストークンを拒否しました" in row.reason


def test_an_account_token_found_invalid_is_on_the_attention_list(tenant, manager, ig_account):
    token_expired_notice(account=ig_account, reason="code 190")

    [row] = [a for a in attention_list(user=manager, now=timezone.now()).rows if a.kind == CONNECTION]
    assert "Instagram のトークンが期限切れか無効です（code 190）" in row.reason
    assert "manage.py add_channel acme instagram" in row.reason

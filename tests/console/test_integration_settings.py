"""A tenant's integration endpoints and secrets: superusers change them, managers see them masked."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.models import Tenant
from deliveries.channels.models import ChannelAccount
from tests.helpers.backlog import API_KEY
from tests.helpers.console import change_url, tenant_form
from tests.helpers.factories import ChannelAccountFactory

pytestmark = pytest.mark.django_db

CHANNEL_TOKEN = "IGQVJ-manager-must-not-see-9876"


@pytest.fixture
def as_superuser(client, superuser):
    client.force_login(superuser)
    return client


def test_it_ignores_a_managers_change_of_the_backlog_url_key_and_project(as_manager, tenant):
    form = tenant_form(
        tenant,
        name="新しい名前",
        backlog_base_url="https://evil.example.com",
        backlog_api_key="typed-by-a-manager",
        backlog_project_key="OTHER",
        line_channel_token="new-line-token",
    )

    response = as_manager.post(change_url(tenant), form)

    assert response.status_code == 302
    saved = Tenant.objects.get(pk=tenant.pk)
    assert saved.name == "新しい名前"  # the settings a manager may change
    assert (saved.backlog_base_url, saved.backlog_api_key, saved.backlog_project_key) == (
        tenant.backlog_base_url,
        API_KEY,
        "ACME",
    )
    assert saved.line_channel_token == tenant.line_channel_token


def test_it_shows_a_manager_the_integration_read_only_and_the_secrets_masked(as_manager, tenant):
    page = as_manager.get(change_url(tenant)).content.decode()

    assert tenant.backlog_base_url in page  # read, not an input
    for name in ("backlog_base_url", "backlog_api_key", "backlog_project_key", "line_channel_token"):
        assert f'name="{name}"' not in page
    for secret in (API_KEY, tenant.line_channel_token, tenant.line_channel_secret, tenant.webhook_token):
        assert secret not in page
    assert "秘密情報（伏せ字）" in page and "••••••••-key" in page


def test_it_keeps_secrets_write_only_for_a_superuser(as_superuser, tenant):
    page = as_superuser.get(change_url(tenant)).content.decode()

    assert API_KEY not in page and tenant.line_channel_token not in page and tenant.webhook_token not in page
    assert 'name="backlog_api_key"' in page and 'type="password"' in page


def test_it_asks_a_superuser_for_the_api_key_again_when_the_url_changes(as_superuser, tenant):
    moved = tenant_form(tenant, backlog_base_url="https://acme2.backlog.jp")

    refused = as_superuser.post(change_url(tenant), moved)
    accepted = as_superuser.post(change_url(tenant), {**moved, "backlog_api_key": "key-of-acme2"})

    assert refused.status_code == 200
    assert (
        "Backlog URL を変更するときは、同じ保存で API キーも入力し直してください。"
        in refused.content.decode()
    )
    assert accepted.status_code == 302
    saved = Tenant.objects.get(pk=tenant.pk)
    assert (saved.backlog_base_url, saved.backlog_api_key) == ("https://acme2.backlog.jp", "key-of-acme2")


def test_it_keeps_the_stored_key_when_a_superuser_saves_without_moving_the_url(as_superuser, tenant):
    response = as_superuser.post(change_url(tenant), tenant_form(tenant, name="名前だけ変更"))

    assert response.status_code == 302
    assert Tenant.objects.get(pk=tenant.pk).backlog_api_key == API_KEY


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/", "BACKLOG_ALLOWED_HOSTS"),
        ("https://evil.example.com", "BACKLOG_ALLOWED_HOSTS"),
        ("http://acme.backlog.jp", "BACKLOG_ALLOWED_HOSTS"),
        ("https://acme.backlog.jp/x", "スペースの URL（例: https://acme.backlog.jp）だけ"),
    ],
)
def test_it_refuses_a_backlog_url_that_is_no_backlog_space(as_superuser, tenant, url, reason):
    form = tenant_form(tenant, backlog_base_url=url, backlog_api_key="k")

    response = as_superuser.post(change_url(tenant), form)

    assert response.status_code == 200 and reason in response.content.decode()
    assert Tenant.objects.get(pk=tenant.pk).backlog_base_url == tenant.backlog_base_url


# -- channel accounts ----------------------------------------------------------------------


@pytest.fixture
def account(tenant):
    return ChannelAccountFactory(tenant=tenant, access_token=CHANNEL_TOKEN, ig_user_id="1784")


def test_it_shows_a_manager_a_channel_account_read_only_and_masked(as_manager, account):
    page = as_manager.get(
        reverse("admin:deliveries_channelaccount_change", args=[account.pk])
    ).content.decode()

    assert CHANNEL_TOKEN not in page and "••••••••9876" in page
    assert 'name="access_token"' not in page and 'name="ig_user_id"' not in page


def test_it_refuses_a_managers_change_of_a_channel_account(as_manager, account):
    form = {
        "tenant": str(account.tenant_id),
        "channel": "instagram",
        "access_token": "x",
        "ig_user_id": "666",
    }

    changed = as_manager.post(reverse("admin:deliveries_channelaccount_change", args=[account.pk]), form)
    added = as_manager.get(reverse("admin:deliveries_channelaccount_add"))

    assert (changed.status_code, added.status_code) == (403, 403)
    assert ChannelAccount.objects.get(pk=account.pk).ig_user_id == "1784"


def test_it_clears_the_token_refusal_mark_only_when_a_new_line_token_is_saved(as_superuser, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(line_token_invalid_at=timezone.now())
    tenant.refresh_from_db()

    kept = as_superuser.post(change_url(tenant), tenant_form(tenant, name="名前だけ変更"))
    assert kept.status_code == 302
    assert Tenant.objects.get(pk=tenant.pk).line_token_invalid_at is not None

    renewed = as_superuser.post(change_url(tenant), tenant_form(tenant, line_channel_token="new-line-token"))
    assert renewed.status_code == 302
    assert Tenant.objects.get(pk=tenant.pk).line_token_invalid_at is None


NEW_SECRET = "-".join(["line", "secret", "typed", "in"])  # joined: a report quotes source lines


def test_a_500_while_saving_a_secret_mails_no_secret(superuser, tenant, monkeypatch):
    """The error report's POST section (and the rest of it) blanks every secret field."""

    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(Tenant, "save", broken)
    client = Client(raise_request_exception=False)
    client.force_login(superuser)
    form = tenant_form(tenant, line_channel_secret=NEW_SECRET, line_channel_token=NEW_SECRET + "-t")

    response = client.post(change_url(tenant), form)

    assert response.status_code == 500
    [report] = mail.outbox
    body = report.body + "".join(content for content, _ in report.alternatives)
    assert "database went away" in body and "line_channel_secret" in body  # the report is there…
    assert NEW_SECRET not in body  # …without the secrets typed in


def test_a_500_while_saving_a_channel_accounts_token_mails_no_token(superuser, tenant, monkeypatch):
    account = ChannelAccountFactory(tenant=tenant, access_token=CHANNEL_TOKEN, ig_user_id="1784")

    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(ChannelAccount, "save", broken)
    client = Client(raise_request_exception=False)
    client.force_login(superuser)
    url = reverse("admin:deliveries_channelaccount_change", args=[account.pk])
    form = {
        "tenant": str(tenant.pk),
        "channel": "instagram",
        "access_token": NEW_SECRET,
        "ig_user_id": "1784",
        "hubspot_mode": "note",
        "hubspot_tag_property": "automedia_tags",
        "skip_connection_check": "on",  # the 500 is the point, not the platform
    }

    response = client.post(url, form)

    assert response.status_code == 500
    [report] = mail.outbox
    body = report.body + "".join(content for content, _ in report.alternatives)
    assert "access_token" in body and NEW_SECRET not in body

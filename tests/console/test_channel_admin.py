"""The admin of channel accounts: write-only tokens, masked hints, a new token clears the flag."""

from __future__ import annotations

import pytest
from django.utils import timezone

from deliveries.channels.models import ChannelAccount
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

TOKEN = "IGQVJ-admin-secret-token-abcd1234"


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_superuser("boss", "boss@example.jp", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def account():
    return ChannelAccount.objects.create(
        tenant=TenantFactory(slug="acme"), channel="instagram", access_token=TOKEN, ig_user_id="1784"
    )


def form(account: ChannelAccount, **changes) -> dict:
    """The change form as posted, without the connection check (tests/console/test_connections.py)."""
    return {
        "skip_connection_check": "on",
        "tenant": str(account.tenant_id),
        "channel": account.channel,
        "access_token": "",
        "refresh_token": "",
        "ig_user_id": account.ig_user_id,
        "open_id": "",
        "hubspot_mode": "note",
        "hubspot_tag_property": "automedia_tags",
        "hubspot_email_from": "",
        "hubspot_reply_to": "",
        **changes,
    }


@pytest.mark.parametrize("path", ["/admin/deliveries/channelaccount/", "/admin/deliveries/channelpost/"])
def test_it_renders_the_lists(staff, account, path):
    assert staff.get(path).status_code == 200


def test_it_never_shows_a_token_in_full(staff, account):
    page = staff.get(f"/admin/deliveries/channelaccount/{account.pk}/change/").content.decode()

    assert TOKEN not in page
    assert "1234（変更する場合のみ入力）" in page


def test_it_keeps_the_token_when_the_field_is_left_empty(staff, account):
    response = staff.post(
        f"/admin/deliveries/channelaccount/{account.pk}/change/", form(account, ig_user_id="1785")
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    account.refresh_from_db()
    assert (account.access_token, account.ig_user_id) == (TOKEN, "1785")


def test_a_new_token_clears_the_token_invalid_flag(staff, account):
    ChannelAccount.objects.update(token_invalid_at=timezone.now())

    response = staff.post(
        f"/admin/deliveries/channelaccount/{account.pk}/change/", form(account, access_token="IGQVJ-new")
    )

    assert response.status_code == 302
    account.refresh_from_db()
    assert account.access_token == "IGQVJ-new" and account.token_invalid_at is None and account.refreshed_at


def test_an_instagram_account_needs_its_user_id(staff, account):
    response = staff.post(
        f"/admin/deliveries/channelaccount/{account.pk}/change/", form(account, ig_user_id="")
    )

    assert response.status_code == 200
    assert "Instagram では必須です" in response.content.decode()

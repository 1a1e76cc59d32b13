"""`manage.py add_channel SLUG instagram|tiktok|hubspot …`: create, update, JSON, secrets never shown."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from deliveries.channels.models import ChannelAccount
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

SECRET = "IGQVJ-very-secret-token-0123456789"


def run(*args: str) -> str:
    """add_channel without its connection check (tests/deliveries/test_add_channel_checks.py)."""
    out = StringIO()
    call_command("add_channel", *args, "--no-check", stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def acme():
    return TenantFactory(slug="acme")


def test_it_creates_an_instagram_account_and_prints_json_without_the_token(acme):
    out = run(
        "acme",
        "instagram",
        "--ig-user-id",
        "17841400000000001",
        "--access-token",
        SECRET,
        "--expires-in",
        "5184000",
        "--json",
    )

    data = json.loads(out)
    account = ChannelAccount.objects.get(tenant=acme, channel="instagram")
    assert (
        data["created"] is True
        and data["access_token_set"] is True
        and data["ig_user_id"] == "17841400000000001"
    )
    assert SECRET not in out and SECRET[-4:] not in out
    assert account.access_token == SECRET
    assert timedelta(days=59) < account.expires_at - timezone.now() <= timedelta(days=60)


def test_it_stores_the_token_encrypted(acme):
    run("acme", "hubspot", "--access-token", "pat-na1-secret-token", "--mode", "email")

    with connection.cursor() as cursor:
        cursor.execute("SELECT access_token FROM deliveries_channelaccount")
        [(stored,)] = cursor.fetchall()
    assert "pat-na1" not in stored


def test_it_updates_an_account_and_clears_its_token_invalid_flag(acme):
    run(
        "acme",
        "tiktok",
        "--open-id",
        "open-1",
        "--access-token",
        "a1",
        "--refresh-token",
        "r1",
        "--expires-in",
        "86400",
    )
    ChannelAccount.objects.update(token_invalid_at=timezone.now())

    out = run(
        "acme", "tiktok", "--access-token", "a2", "--refresh-token", "r2", "--refresh-expires-in", "15552000"
    )

    account = ChannelAccount.objects.get()
    assert out.startswith("更新しました: acme / TikTok")
    assert (account.access_token, account.refresh_token, account.open_id) == ("a2", "r2", "open-1")
    assert account.token_invalid_at is None and account.refresh_expires_at is not None
    assert "a2" not in out and "r2" not in out


def test_it_reads_a_secret_given_as_dash_from_stdin(acme, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("from-stdin-token\n"))

    run("acme", "hubspot", "--access-token", "-")

    assert ChannelAccount.objects.get().access_token == "from-stdin-token"


@pytest.mark.parametrize(
    ("channel", "missing"),
    [("instagram", "--ig-user-id"), ("tiktok", "--open-id"), ("hubspot", "--access-token")],
)
def test_a_new_account_needs_its_identifiers(acme, channel, missing):
    args = {"instagram": ["--access-token", "t"], "tiktok": ["--access-token", "t"], "hubspot": []}[channel]

    with pytest.raises(CommandError, match=missing):
        run("acme", channel, *args)


def test_an_unknown_tenant_is_refused():
    with pytest.raises(CommandError, match="テナント「nobody」がありません"):
        run("nobody", "hubspot", "--access-token", "t")


def test_it_sets_the_hubspot_mode_and_email_settings(acme):
    out = run(
        "acme",
        "hubspot",
        "--access-token",
        "t",
        "--mode",
        "email",
        "--email-from",
        "info@example.jp",
        "--tag-property",
        "fan_tags",
    )

    account = ChannelAccount.objects.get()
    assert (account.hubspot_mode, account.hubspot_email_from, account.hubspot_tag_property) == (
        "email",
        "info@example.jp",
        "fan_tags",
    )
    assert "モード: マーケティングメール（single-send）" in out

"""The daily token job: Instagram refresh before expiry, TikTok rotation, single flight, notices."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.core import mail

from backlog_bridge.schedules import RECURRING
from core.timeutil import JST
from deliveries.channels.models import ChannelAccount
from deliveries.channels.token_upkeep import channel_tokens_upkeep
from deliveries.tasks import channel_tokens
from tests.helpers.channels import IG_TOKEN, TT_REFRESH

NOW = datetime(2026, 12, 1, 3, 0, tzinfo=JST)


def test_it_refreshes_an_instagram_token_ten_days_before_it_expires(ig_account, instagram):
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=NOW + timedelta(days=9))

    assert channel_tokens_upkeep(now=NOW) == {"refreshed": 1, "failed": 0, "skipped": 0, "error": 0}

    ig_account.refresh_from_db()
    assert ig_account.access_token.startswith("IGAA") and ig_account.access_token != IG_TOKEN
    assert ig_account.expires_at == NOW + timedelta(days=60)
    assert ig_account.refreshed_at == NOW
    [call] = instagram.calls("/refresh_access_token")
    assert call.query["grant_type"] == ["ig_refresh_token"] and call.query["access_token"] == [IG_TOKEN]


def test_it_leaves_an_instagram_token_far_from_expiry_or_younger_than_a_day(ig_account, instagram):
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=NOW + timedelta(days=30))
    assert channel_tokens_upkeep(now=NOW)["skipped"] == 1
    ChannelAccount.objects.filter(pk=ig_account.pk).update(
        expires_at=NOW + timedelta(days=5), refreshed_at=NOW - timedelta(hours=2)
    )
    assert channel_tokens_upkeep(now=NOW)["skipped"] == 1
    assert instagram.calls() == []


def test_a_refused_instagram_refresh_flags_the_account_and_notifies(ig_account, instagram):
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=NOW + timedelta(days=2))
    instagram.fail_graph(190, "Error validating access token", path_prefix="/refresh_access_token")

    assert channel_tokens_upkeep(now=NOW)["failed"] == 1

    ig_account.refresh_from_db()
    assert ig_account.token_invalid_at is not None and ig_account.access_token == IG_TOKEN
    assert "Instagram トークンの更新が必要です" in mail.outbox[0].subject
    assert channel_tokens_upkeep(now=NOW)["refreshed"] == 0 and len(mail.outbox) == 1  # told once


def test_an_expired_instagram_token_is_reported_not_refreshed(ig_account, instagram):
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=NOW - timedelta(hours=1))

    channel_tokens_upkeep(now=NOW)

    assert instagram.calls() == [] and len(mail.outbox) == 1


def test_a_transient_failure_is_left_for_the_next_run(ig_account, instagram):
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=NOW + timedelta(days=2))
    instagram.fail_next(503, path_prefix="/refresh_access_token")

    assert channel_tokens_upkeep(now=NOW)["error"] == 1
    ig_account.refresh_from_db()
    assert ig_account.token_invalid_at is None and ig_account.refresh_lease_until is None
    assert mail.outbox == []


def test_it_refreshes_tiktok_and_keeps_the_rotated_refresh_token(tt_account, tiktok):
    ChannelAccount.objects.filter(pk=tt_account.pk).update(expires_at=NOW + timedelta(hours=2))

    assert channel_tokens_upkeep(now=NOW)["refreshed"] == 1
    tt_account.refresh_from_db()
    first = tt_account.refresh_token
    assert first != TT_REFRESH and first == tiktok.accounts["open-id-1"].refresh_token
    assert tt_account.refresh_expires_at == NOW + timedelta(days=180)

    assert channel_tokens_upkeep(now=NOW + timedelta(days=1))["refreshed"] == 1  # uses the rotated one
    tt_account.refresh_from_db()
    assert tt_account.refresh_token not in (first, TT_REFRESH)
    assert tiktok.refresh_calls == 2
    [form] = [r.body for r in tiktok.calls("/v2/oauth/token/")][:1]
    assert form == {
        "client_key": "sandbox-client-key",
        "client_secret": "sandbox-client-secret",
        "grant_type": "refresh_token",
        "refresh_token": TT_REFRESH,
    }


def test_only_one_refresh_per_tiktok_account_runs_at_a_time(tt_account, tiktok):
    ChannelAccount.objects.filter(pk=tt_account.pk).update(
        expires_at=NOW + timedelta(hours=2), refresh_lease_until=NOW + timedelta(seconds=30)
    )

    assert channel_tokens_upkeep(now=NOW)["skipped"] == 1
    assert tiktok.refresh_calls == 0
    assert (
        channel_tokens_upkeep(now=NOW + timedelta(seconds=31))["refreshed"] == 1
    )  # a dead holder's lease ends


def test_a_refused_tiktok_refresh_flags_the_account_and_notifies(tt_account, tiktok):
    ChannelAccount.objects.filter(pk=tt_account.pk).update(expires_at=NOW + timedelta(hours=2))
    tiktok.accounts["open-id-1"].refresh_token = "rotated-elsewhere"

    assert channel_tokens_upkeep(now=NOW)["failed"] == 1

    tt_account.refresh_from_db()
    assert tt_account.token_invalid_at is not None and tt_account.refresh_lease_until is None
    assert "TikTok トークンの更新が必要です" in mail.outbox[0].subject
    assert "invalid_grant" in mail.outbox[0].body


def test_hubspot_tokens_are_static(hs_account, hubspot):
    assert channel_tokens_upkeep(now=NOW) == {"refreshed": 0, "failed": 0, "skipped": 1, "error": 0}
    assert hubspot.calls() == []


@pytest.mark.django_db
def test_it_runs_daily_as_a_django_q_job():
    from django_q.models import Schedule

    assert RECURRING["automedia-channel-tokens"] == {
        "func": "deliveries.tasks.channel_tokens",
        "schedule_type": "D",
    }
    assert Schedule.objects.get(name="automedia-channel-tokens").func == "deliveries.tasks.channel_tokens"
    assert channel_tokens() == {"refreshed": 0, "failed": 0, "skipped": 0, "error": 0}

"""HubSpot through `deliver`: fake Backlog and fake HubSpot on loopback."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core import mail

from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import DeliveryAttempt, DeliverySchedule
from sandbox.hubspot import NOTES, SINGLE_SEND
from tests.helpers.backlog import texts
from tests.helpers.channels import channel_body
from tests.helpers.deliveries import DUE, fire

pytestmark = pytest.mark.usefixtures("hs_account")

EMAIL = {"type": "email", "email_id": 4242, "custom_properties": {"release_date": "{{ date }}"}}


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def post_of(key: str) -> ChannelPost:
    return ChannelPost.objects.get(task__issue_key=key)


def audience_ids(hubspot) -> set[str]:
    """fan1 (active) and fan2 (active, vip): `tag:active, !tag:opt_out`."""
    return {
        cid
        for cid, c in hubspot.contacts.items()
        if c["properties"]["email"] in ("fan1@example.jp", "fan2@example.jp")
    }


def email_mode(account: ChannelAccount) -> None:
    ChannelAccount.objects.filter(pk=account.pk).update(
        hubspot_mode="email", hubspot_email_from="info@example.jp"
    )


def test_it_creates_one_note_on_the_contacts_of_the_audience(approve_channel, hubspot, fake_backlog):
    key = approve_channel("hubspot")

    assert fire(key) == "delivered"

    [(note_id, note)] = hubspot.notes.items()
    assert note["properties"]["hs_note_body"].startswith("<p>2026-12-10 新作を配信しました</p>")
    assert post_of(key).send_key in note["properties"]["hs_note_body"]
    assert hubspot.associations[note_id] == audience_ids(hubspot)
    comment = texts(fake_backlog, key)[-1]
    assert f"ノートID: {note_id}" in comment and "関連付けたコンタクト: 2 件" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_a_note_whose_answer_was_lost_is_found_by_its_marker_not_created_again(approve_channel, hubspot):
    key = approve_channel("hubspot")
    hubspot.fail_next(drop=True, path_prefix=NOTES, method="POST")

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"

    assert len(hubspot.notes) == 1
    assert post_of(key).note_id == next(iter(hubspot.notes))


def test_it_sends_one_email_per_contact_with_a_send_id(approve_channel, hubspot, fake_backlog, hs_account):
    email_mode(hs_account)
    key = approve_channel("hubspot", content=EMAIL)

    assert fire(key) == "delivered"

    emails = list(hubspot.outbox.values())
    assert sorted(e.to for e in emails) == ["fan1@example.jp", "fan2@example.jp"]
    assert {e.custom_properties["release_date"] for e in emails} == {"2026-12-10"}
    assert len({e.send_id for e in emails}) == 2
    sent = [r.body for r in hubspot.calls(SINGLE_SEND)]
    assert {b["message"]["from"] for b in sent} == {"info@example.jp"}
    assert "送信: 2 件" in texts(fake_backlog, key)[-1] and "メールID: 4242" in texts(fake_backlog, key)[-1]


def test_a_resend_after_a_lost_answer_is_ignored_by_hubspot(
    approve_channel, hubspot, hs_account, fake_backlog
):
    email_mode(hs_account)
    key = approve_channel("hubspot", content=EMAIL)
    hubspot.fail_next(drop=True, path_prefix=SINGLE_SEND)

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"

    assert len(hubspot.outbox) == 2  # one email per contact, though three requests went out
    results = [r.response.get("sendResult") for r in hubspot.calls(SINGLE_SEND) if r.status == 200]
    assert results.count("IDEMPOTENT_IGNORE") == 1
    assert "送信: 2 件" in texts(fake_backlog, key)[-1]
    assert DeliveryAttempt.objects.filter(endpoint=SINGLE_SEND, outcome="duplicate").count() == 1


def test_it_reports_contacts_hubspot_would_not_mail(approve_channel, hubspot, hs_account, fake_backlog):
    email_mode(hs_account)
    hubspot.unsubscribed.add("fan2@example.jp")
    key = approve_channel("hubspot", content=EMAIL)

    assert fire(key) == "delivered"
    comment = texts(fake_backlog, key)[-1]
    assert "送信: 1 件" in comment and "PREVIOUSLY_UNSUBSCRIBED_PORTAL 1 件" in comment


def test_it_ends_in_error_with_a_token_notice_on_401(approve_channel, hubspot, fake_backlog, hs_account):
    hubspot.revoke("pat-na1-hubspot-token")
    key = approve_channel("hubspot")

    assert fire(key) == "failed"

    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith("[automedia] 配信できませんでした: 認証エラー: HubSpot のトークンが無効です")
    hs_account.refresh_from_db()
    assert hs_account.token_invalid_at is not None
    assert "HubSpot トークンの更新が必要です" in mail.outbox[0].subject
    assert hubspot.notes == {}


def test_a_missing_scope_ends_in_error_without_a_token_notice(approve_channel, hubspot, fake_backlog):
    key = approve_channel("hubspot")
    hubspot.fail_hubspot(
        403, "This app hasn't been granted all required scopes", "MISSING_SCOPES", path_prefix=NOTES
    )

    assert fire(key) == "failed"
    assert "権限（スコープ）がありません" in texts(fake_backlog, key)[-1]
    assert mail.outbox == []


def test_a_429_is_retried_after_the_rate_limit_interval(approve_channel, hubspot):
    key = approve_channel("hubspot")
    hubspot.fail_hubspot(
        429, "You have reached your ten_secondly_rolling limit.", "RATE_LIMITS", path_prefix=NOTES
    )

    assert fire(key) == "retry in 10s"
    assert schedule_of(key).attempts == 1
    assert fire(key) == "delivered"
    assert len(hubspot.notes) == 1


def test_it_paces_calls_by_the_rate_limit_headers(approve_channel, hubspot):
    hubspot.burst = 7  # contacts page → 6 left, note → 5 left: the association waits for the window
    key = approve_channel("hubspot")

    result = fire(key)

    assert result.startswith("waiting until") and "レート制限に合わせて待機" in result
    assert schedule_of(key).due_at - DUE < timedelta(seconds=11) and schedule_of(key).attempts == 0
    assert post_of(key).note_id and not post_of(key).details.get("associated")
    assert fire(key) == "delivered"
    assert len(hubspot.notes) == 1 and len(hubspot.associations[post_of(key).note_id]) == 2
    assert not [r for r in hubspot.calls() if r.status == 429]


def test_it_waits_for_midnight_in_the_accounts_time_zone_when_the_daily_limit_runs_low(
    approve_channel, hubspot
):
    hubspot.time_zone = "America/New_York"
    key = approve_channel("hubspot")
    hubspot.daily = len(hubspot.calls()) + 6  # the contacts page leaves 5 for the day

    result = fire(key)

    assert result.startswith("waiting until") and "1 日の API 上限" in result
    # Due 2026-12-10 10:00 JST is 12-09 20:00 in New York: the limit resets at its midnight.
    assert schedule_of(key).due_at == datetime(2026, 12, 10, 0, 5, tzinfo=ZoneInfo("America/New_York"))
    assert len(hubspot.calls("/account-info/v3/details")) == 1 and hubspot.notes == {}


def test_it_ends_in_error_when_hubspot_rejects_the_content(approve_channel, hubspot, fake_backlog):
    key = approve_channel("hubspot")
    hubspot.fail_hubspot(400, "Unsupported media", "INVALID_PARAMS", path_prefix=NOTES)

    assert fire(key) == "failed"
    comment = texts(fake_backlog, key)[-1]
    assert "HubSpot が受け付けませんでした" in comment and "Unsupported media" in comment


def test_a_portal_validation_rule_is_a_configuration_error_never_retried(
    approve_channel, hubspot, fake_backlog
):
    hubspot.required_note_properties = {"hubspot_owner_id"}
    key = approve_channel("hubspot")

    assert fire(key) == "failed"

    comment = texts(fake_backlog, key)[-1]
    assert "HubSpot の設定エラー（VALIDATION_ERROR）" in comment and "hubspot_owner_id" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert len([r for r in hubspot.calls(NOTES, "POST") if r.path == NOTES]) == 1
    assert hubspot.notes == {} and schedule_of(key) is None


def test_every_body_it_sends_is_valid_against_hubspots_openapi(approve_channel, hubspot, hs_account):
    key = approve_channel("hubspot")
    assert fire(key) == "delivered"
    email_mode(hs_account)
    key = approve_channel("hubspot", content=EMAIL)
    assert fire(key) == "delivered"

    [note] = [r.body for r in hubspot.calls(NOTES, "POST") if r.path == NOTES]
    assert note["associations"] == []
    sends = [r.body for r in hubspot.calls(SINGLE_SEND)]
    assert len(sends) == 2 and all(b["contactProperties"] == {} for b in sends)
    assert not [r for r in hubspot.calls() if r.status == 400]


def test_a_template_for_the_other_mode_is_refused_naming_the_field(approve_channel, hubspot, fake_backlog):
    key = approve_channel("hubspot", content=EMAIL)

    assert fire(key) == "failed"
    assert (
        "テンプレの type「email」と HubSpot アカウントのモード「note」が一致しません"
        in texts(fake_backlog, key)[-1]
    )
    assert hubspot.calls() == []


def test_an_audience_without_contacts_is_an_error(approve_channel, hubspot, fake_backlog):
    key = approve_channel("hubspot", body=channel_body("hubspot", audience="tag:nobody"))

    assert fire(key) == "failed"
    assert "対象者がいません（HubSpot のコンタクト" in texts(fake_backlog, key)[-1]

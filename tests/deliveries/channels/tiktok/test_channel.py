"""TikTok through `deliver`: fake Backlog and fake TikTok on loopback."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.tiktok.transport import VIDEO_INIT
from deliveries.models import DeliveryAttempt, DeliverySchedule
from tests.helpers.backlog import texts
from tests.helpers.channels import TT_REFRESH, TT_TOKEN, channel_body
from tests.helpers.deliveries import DUE, fire

pytestmark = pytest.mark.usefixtures("tt_account")

PUBLIC = channel_body("tiktok", tiktok={"公開範囲": "PUBLIC_TO_EVERYONE", "コメント": "許可"})


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def post_of(key: str) -> ChannelPost:
    return ChannelPost.objects.get(task__issue_key=key)


def audited(tiktok) -> None:
    tiktok.accounts["open-id-1"].privacy_level_options = [
        "PUBLIC_TO_EVERYONE",
        "FOLLOWER_OF_CREATOR",
        "SELF_ONLY",
    ]


def test_it_posts_once_and_comments_the_publish_id_post_id_and_url(approve_channel, tiktok, fake_backlog):
    audited(tiktok)
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok", body=PUBLIC)

    assert fire(key) == "delivered"

    [publish] = tiktok.inits()
    assert publish.body["source_info"] == {
        "source": "PULL_FROM_URL",
        "video_url": "https://cdn.example.jp/new.mp4",
    }
    assert publish.body["post_info"] == {
        "title": "2026-12-10 の新作",
        "privacy_level": "PUBLIC_TO_EVERYONE",
        "disable_comment": False,
        "disable_duet": True,
        "disable_stitch": True,
        "brand_organic_toggle": False,
        "brand_content_toggle": False,
    }
    comment = texts(fake_backlog, key)[-1]
    assert f"publish_id: {publish.publish_id}" in comment and f"投稿ID: {publish.post_id}" in comment
    assert f"URL: https://www.tiktok.com/@automedia_demo/video/{publish.post_id}" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_it_rechecks_the_upload_on_the_same_schedule_until_it_completes(approve_channel, tiktok):
    tiktok.processing_fetches = 2
    key = approve_channel("tiktok")

    first = fire(key)
    assert first.startswith("waiting until") and "PROCESSING_DOWNLOAD" in first
    assert timedelta(seconds=14) < schedule_of(key).due_at - DUE < timedelta(seconds=17)
    assert fire(key).startswith("waiting until")
    assert fire(key) == "delivered"

    assert len(tiktok.inits()) == 1
    assert post_of(key).post_id == ""  # SELF_ONLY posts have no public id


def test_a_lost_answer_to_init_is_never_posted_again(approve_channel, tiktok, fake_backlog):
    key = approve_channel("tiktok")
    tiktok.fail_next(drop=True, path_prefix=VIDEO_INIT)

    assert fire(key) == "failed"

    assert len(tiktok.inits()) == 1  # TikTok has the post; automedia did not make a second one
    comment = texts(fake_backlog, key)[-1]
    assert "投稿されたかどうか確認できません" in comment and "TikTok アプリで投稿を確認" in comment


def test_a_lost_answer_to_a_status_read_is_read_again(approve_channel, tiktok):
    key = approve_channel("tiktok")
    tiktok.fail_next(drop=True, path_prefix="/v2/post/publish/status/fetch/")

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"  # the lost read had moved TikTok on: the next read sees the end
    assert len(tiktok.inits()) == 1


def test_it_refuses_at_publishing_a_privacy_level_the_creator_no_longer_allows(
    approve_channel, tiktok, fake_backlog
):
    audited(tiktok)
    key = approve_channel("tiktok", body=PUBLIC)
    tiktok.accounts["open-id-1"].privacy_level_options = ["SELF_ONLY"]

    assert fire(key) == "failed"

    comment = texts(fake_backlog, key)[-1]
    assert (
        "公開範囲「PUBLIC_TO_EVERYONE」はこのクリエイター（デモ（@automedia_demo））では使えません" in comment
    )
    assert "SELF_ONLY（自分のみ）" in comment
    assert tiktok.inits() == []


def test_it_refreshes_an_expired_token_and_stores_the_rotated_refresh_token(
    approve_channel, tiktok, tt_account
):
    ChannelAccount.objects.filter(pk=tt_account.pk).update(expires_at=DUE - timedelta(hours=1))
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok")

    assert fire(key) == "delivered"

    tt_account.refresh_from_db()
    assert tiktok.refresh_calls == 1
    assert tt_account.refresh_token == tiktok.accounts["open-id-1"].refresh_token != TT_REFRESH
    assert tt_account.access_token != TT_TOKEN and tt_account.expires_at > DUE
    assert tt_account.refresh_lease_until is None


def test_it_refreshes_once_when_tiktok_says_the_token_is_invalid(approve_channel, tiktok, tt_account):
    tiktok.expire_access_token(TT_TOKEN)
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok")

    assert fire(key) == "delivered"
    assert tiktok.refresh_calls == 1 and len(tiktok.inits()) == 1


def test_a_refused_refresh_ends_in_error_with_a_token_notice(
    approve_channel, tiktok, fake_backlog, tt_account
):
    tiktok.expire_access_token(TT_TOKEN)
    tiktok.accounts["open-id-1"].refresh_token = "rotated-elsewhere"
    key = approve_channel("tiktok")

    assert fire(key) == "failed"

    comment = texts(fake_backlog, key)[-1]
    assert "TikTok のトークンを更新できませんでした" in comment and "invalid_grant" in comment
    assert "TikTok のトークンが期限切れか無効です。管理画面の「チャネルアカウント」" in comment
    tt_account.refresh_from_db()
    assert tt_account.token_invalid_at is not None
    assert len(mail.outbox) == 1 and "TikTok トークンの更新が必要です" in mail.outbox[0].subject
    assert tiktok.inits() == []


def test_it_waits_while_another_process_refreshes_the_token(approve_channel, tiktok, tt_account):
    ChannelAccount.objects.filter(pk=tt_account.pk).update(
        expires_at=DUE - timedelta(hours=1), refresh_lease_until=DUE + timedelta(seconds=30)
    )
    key = approve_channel("tiktok")
    asked_at_approval = len(tiktok.calls())

    assert "別の処理が更新中" in fire(key)
    assert tiktok.refresh_calls == 0 and len(tiktok.calls()) == asked_at_approval


def test_the_daily_cap_ends_in_error_with_the_reason(approve_channel, tiktok, fake_backlog):
    tiktok.accounts["open-id-1"].daily_cap = 0
    key = approve_channel("tiktok")

    assert fire(key) == "failed"

    comment = texts(fake_backlog, key)[-1]
    assert "1 日の投稿上限に達しました" in comment and "spam_risk_too_many_posts" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert post_of(key).phase == "new"


def test_a_rate_limited_init_is_retried_a_minute_later(approve_channel, tiktok):
    key = approve_channel("tiktok")
    tiktok.fail_tiktok(429, "rate_limit_exceeded", "Too many requests", path_prefix=VIDEO_INIT)

    assert fire(key) == "retry in 60s"
    assert post_of(key).phase == "new" and schedule_of(key).attempts == 1
    assert fire(key).startswith("waiting")
    assert len(tiktok.inits()) == 1


def test_it_keeps_to_the_per_minute_limit_of_init_calls(approve_channel, tiktok, tenant):
    key = approve_channel("tiktok")
    task = post_task(key)
    for _ in range(6):
        DeliveryAttempt.objects.create(
            tenant=tenant, task=task, approval_seq=0, channel="tiktok", endpoint=VIDEO_INIT, outcome="sent"
        )
    DeliveryAttempt.objects.update(created_at=DUE - timedelta(seconds=20))

    result = fire(key)

    assert "1 分あたりの呼び出し上限" in result
    assert schedule_of(key).due_at == DUE - timedelta(seconds=20) + timedelta(seconds=61)
    assert tiktok.inits() == []


def post_task(key: str):
    from deliveries.models import ContentTask

    return ContentTask.objects.get(issue_key=key)


def test_a_failed_upload_ends_in_error_with_tiktoks_reason(approve_channel, tiktok, fake_backlog):
    tiktok.fail_next_publish("file_format_check_failed")
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok")

    assert fire(key) == "failed"
    assert "file_format_check_failed" in texts(fake_backlog, key)[-1]


def test_it_posts_photos(approve_channel, tiktok):
    content = {
        "type": "photo",
        "title": "{{ date }}",
        "photo_urls": ["https://cdn.example.jp/1.jpg", "https://cdn.example.jp/2.jpg"],
        "photo_cover_index": 1,
    }
    tiktok.processing_fetches = 0
    body = channel_body("tiktok", tiktok={"デュエット": None, "スティッチ": None, "商用コンテンツ": "自社"})
    key = approve_channel("tiktok", content=content, body=body)

    assert fire(key) == "delivered"
    [publish] = tiktok.inits()
    assert publish.kind == "photo" and publish.body["source_info"]["photo_cover_index"] == 1
    assert publish.body["post_info"] == {
        "title": "2026-12-10",
        "privacy_level": "SELF_ONLY",
        "disable_comment": True,
        "brand_organic_toggle": True,
        "brand_content_toggle": False,
    }


def test_a_server_error_on_init_is_retried_as_tiktok_said_it_failed(approve_channel, tiktok):
    key = approve_channel("tiktok")
    tiktok.fail_tiktok(500, "internal_error", "Something went wrong", path_prefix=VIDEO_INIT)

    assert fire(key) == "retry in 30s"
    assert timezone.now() is not None and post_of(key).phase == "new"

"""TikTok's posting choices (公開範囲, コメント, デュエット, スティッチ, 商用コンテンツ, 音楽利用確認) at approval:
the body states each one, creator_info allows it, and the init carries exactly them."""

from __future__ import annotations

from functools import partial

import pytest

from deliveries.models import ContentTask
from tests.helpers.backlog import texts
from tests.helpers.channels import channel_approve, channel_body
from tests.helpers.deliveries import fire, scheduled

pytestmark = pytest.mark.usefixtures("tt_account")

REFUSED = "[automedia] 承認時の確認で問題が見つかったため配信を予約できません。"


@pytest.fixture
def approve_tiktok(fake_backlog, tenant, pump):
    """Approve a TikTok issue on 2026-12-01 09:00 JST; returns its key."""
    return partial(channel_approve, fake_backlog, pump, tenant, "tiktok")


@pytest.mark.parametrize("label", ["公開範囲", "コメント", "デュエット", "スティッチ", "商用コンテンツ"])
def test_it_refuses_a_video_post_whose_body_lacks_a_choice(approve_tiktok, fake_backlog, tiktok, label):
    key = approve_tiktok(body=channel_body("tiktok", tiktok={label: None}))

    assert not scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith(REFUSED)
    assert f"TikTok の投稿には「## 配信メタ」の {label} が必要です" in comment
    assert "既定値を選びません" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert tiktok.inits() == []


def test_it_refuses_a_privacy_level_creator_info_does_not_allow(approve_tiktok, fake_backlog, tiktok):
    tiktok.accounts["open-id-1"].privacy_level_options = ["FOLLOWER_OF_CREATOR", "SELF_ONLY"]
    key = approve_tiktok(body=channel_body("tiktok", tiktok={"公開範囲": "PUBLIC_TO_EVERYONE"}))

    assert not scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith(REFUSED)
    assert (
        "公開範囲「PUBLIC_TO_EVERYONE」はこのクリエイター（デモ（@automedia_demo））では使えません" in comment
    )
    assert "使えるのは FOLLOWER_OF_CREATOR（フォロワー） / SELF_ONLY（自分のみ）" in comment
    assert tiktok.inits() == []


def test_it_refuses_allowing_an_interaction_the_creator_turned_off(approve_tiktok, fake_backlog, tiktok):
    tiktok.accounts["open-id-1"].duet_disabled = True
    key = approve_tiktok(body=channel_body("tiktok", tiktok={"デュエット": "許可"}))

    assert not scheduled(key)
    assert (
        "デュエット「許可」はできません: クリエイター（デモ（@automedia_demo））が TikTok でデュエットをオフ"
        in (texts(fake_backlog, key)[-1])
    )


def test_it_leaves_branded_content_posted_privately_to_tiktok(approve_tiktok, fake_backlog, tiktok):
    tiktok.processing_fetches = 0
    key = approve_tiktok(body=channel_body("tiktok", tiktok={"商用コンテンツ": "ブランド"}))

    assert scheduled(key)
    assert "ブランドコンテンツ）は" not in texts(fake_backlog, key)[-1]
    assert fire(key) == "delivered"
    [publish] = tiktok.inits()
    assert publish.body["post_info"]["privacy_level"] == "SELF_ONLY"
    assert publish.body["post_info"]["brand_content_toggle"] is True


def test_the_setting_refuses_branded_content_posted_privately(approve_tiktok, fake_backlog, settings):
    settings.TIKTOK_REFUSE_PRIVATE_BRANDED = True
    key = approve_tiktok(body=channel_body("tiktok", tiktok={"商用コンテンツ": "ブランド"}))

    assert not scheduled(key)
    assert (
        "商用コンテンツ「ブランド」（ブランドコンテンツ）は 公開範囲「SELF_ONLY」では投稿できません"
        in (texts(fake_backlog, key)[-1])
    )


def test_it_refuses_a_template_that_presets_a_choice(approve_tiktok, fake_backlog):
    content = {
        "type": "video",
        "video_url": "https://cdn.example.jp/{{ video }}",
        "privacy_level": "SELF_ONLY",
    }
    key = approve_tiktok(content=content)

    assert not scheduled(key)
    assert (
        "privacy_level はテンプレには書けません。課題本文の「## 配信メタ」に「- 公開範囲: …」"
        in (texts(fake_backlog, key)[-1])
    )


def test_it_refuses_a_photo_title_over_90_characters(approve_tiktok, fake_backlog):
    content = {
        "type": "photo",
        "title": "{{ date }}" + "あ" * 81,
        "photo_urls": ["https://cdn.example.jp/1.jpg"],
    }
    body = channel_body("tiktok", tiktok={"デュエット": None, "スティッチ": None})
    key = approve_tiktok(content=content, body=body)

    assert not scheduled(key)
    assert "title が 91 文字あります（上限 90 文字）" in texts(fake_backlog, key)[-1]


def test_an_approval_names_the_creator_and_the_levels_it_allows(approve_tiktok, fake_backlog):
    key = approve_tiktok()

    assert scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert "配信を予約しました" in comment
    assert "TikTok クリエイター: デモ（@automedia_demo）、使える公開範囲: SELF_ONLY（自分のみ）" in comment
    assert ContentTask.objects.get(issue_key=key).parsed["tiktok"] == {
        "privacy_level": "SELF_ONLY",
        "comment": False,
        "duet": False,
        "stitch": False,
        "commercial": "none",
        "music_usage": True,
    }


@pytest.mark.parametrize("kind", ["video", "photo"])
def test_it_refuses_a_post_whose_body_lacks_the_music_usage_confirmation(
    approve_tiktok, fake_backlog, tiktok, kind
):
    photo = {"type": "photo", "title": "{{ date }}", "photo_urls": ["https://cdn.example.jp/1.jpg"]}
    lacking = {"音楽利用確認": None} | ({"デュエット": None, "スティッチ": None} if kind == "photo" else {})
    key = approve_tiktok(
        body=channel_body("tiktok", tiktok=lacking), content=photo if kind == "photo" else None
    )

    assert not scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith(REFUSED)
    assert "TikTok の投稿には「## 配信メタ」の 音楽利用確認 が必要です（例: - 音楽利用確認: 同意）" in comment
    assert "By posting, you agree to TikTok's Music Usage Confirmation" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert tiktok.inits() == []


def test_it_refuses_a_music_usage_confirmation_that_is_not_consent(approve_tiktok, fake_backlog, tiktok):
    key = approve_tiktok(body=channel_body("tiktok", tiktok={"音楽利用確認": "確認中"}))

    assert not scheduled(key)
    assert "音楽利用確認「確認中」は「同意」とだけ書けます" in texts(fake_backlog, key)[-1]
    assert tiktok.inits() == []


def test_tiktok_that_cannot_be_asked_never_blocks_the_approval(approve_tiktok, fake_backlog, tiktok):
    tiktok.fail_tiktok(500, "internal_error", "down", path_prefix="/v2/post/publish/creator_info/query/")
    key = approve_tiktok()

    assert scheduled(key)
    assert "TikTok クリエイター: 未確認（TikTok に確認できませんでした" in texts(fake_backlog, key)[-1]


def test_the_init_carries_exactly_the_choices_of_the_body(approve_tiktok, tiktok):
    tiktok.accounts["open-id-1"].privacy_level_options = ["FOLLOWER_OF_CREATOR", "SELF_ONLY"]
    tiktok.processing_fetches = 0
    choices = {
        "公開範囲": "フォロワー",
        "コメント": "許可",
        "スティッチ": "許可",
        "商用コンテンツ": "ブランド",
    }
    key = approve_tiktok(body=channel_body("tiktok", tiktok=choices))

    assert fire(key) == "delivered"

    [publish] = tiktok.inits()
    assert publish.body["post_info"] == {
        "title": "2026-12-10 の新作",
        "privacy_level": "FOLLOWER_OF_CREATOR",
        "disable_comment": False,
        "disable_duet": True,
        "disable_stitch": False,
        "brand_organic_toggle": False,
        "brand_content_toggle": True,
    }

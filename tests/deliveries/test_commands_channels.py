"""`/automedia send` and `/automedia preview` for Instagram, TikTok and HubSpot issues,
through the webhook with the fake Backlog and the fake platforms."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

import pytest

from core.timeutil import JST
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import DeliveryAttempt, DeliverySchedule, MessageTemplate
from tests.helpers.backlog import reply_to
from tests.helpers.channels import channel_body, channel_template
from tests.helpers.deliveries import fire

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)


@pytest.fixture(autouse=True)
def _no_ai_review(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def say(fake_backlog, pump, tenant):
    """Post a comment as an operator and deliver the resulting webhooks; returns automedia's reply."""

    return functools.partial(reply_to, fake_backlog, pump, tenant, at=NOW)


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def fire_until_done(key: str, times: int = 4) -> str:
    """Run the schedule, then each re-check (container / upload processing) it asks for."""
    result = ""
    for _ in range(times):
        result = fire(key)
        if not result.startswith("waiting"):
            break
    return result


def sent_now(key: str) -> bool:
    schedule = schedule_of(key)
    return schedule.reason == "command" and abs((schedule.due_at - NOW).total_seconds() - 5) < 2


# -- send: accepted ------------------------------------------------------------------------


def test_it_sends_an_instagram_post_now_with_the_instagram_template(
    approve_channel, ig_account, instagram, say, fake_backlog
):
    key = approve_channel("instagram")
    channel_template(
        "instagram",
        {"type": "image", "caption": "速報 {{ date }}", "image_url": "https://cdn.example.jp/{{ image }}"},
        name="flash",
    )

    reply = say(key, "/automedia send template=flash")

    assert reply.startswith("[automedia] /automedia send を受け付けました")
    assert "チャネル: Instagram" in reply and "テンプレ: flash" in reply and "フォロワー" in reply
    assert sent_now(key)
    assert fire_until_done(key) == "delivered"
    [media] = instagram.published()
    assert media["params"]["caption"] == "速報 2026-12-10"
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_it_sends_a_tiktok_post_now_through_the_upload_rechecks(approve_channel, tt_account, tiktok, say):
    key = approve_channel("tiktok")

    reply = say(key, "/automedia send template=post")

    assert "受け付けました" in reply and "チャネル: TikTok" in reply
    assert sent_now(key)
    assert fire_until_done(key) == "delivered"
    assert len(tiktok.inits()) == 1


def test_it_sends_a_hubspot_note_to_the_audience_of_the_command(approve_channel, hs_account, hubspot, say):
    key = approve_channel("hubspot")

    reply = say(key, "/automedia send template=post audience=tag:vip")

    assert "受け付けました" in reply and "チャネル: HubSpot" in reply and "対象: tag:vip" in reply
    assert fire_until_done(key) == "delivered"
    [(note_id, _)] = hubspot.notes.items()
    [vip] = [cid for cid, c in hubspot.contacts.items() if c["properties"]["email"] == "fan2@example.jp"]
    assert hubspot.associations[note_id] == {vip}


# -- send: refused, each problem named ---------------------------------------------------


def refused(reply: str) -> bool:
    return reply.startswith("[automedia] 送信できません")


def test_it_looks_up_the_channels_templates_not_lines(approve_channel, ig_account, say):
    MessageTemplate.objects.create(name="flash", rev="f1", messages=[{"type": "text", "text": "LINE 用"}])
    key = approve_channel("instagram")
    before = schedule_of(key).due_at

    reply = say(key, "/automedia send template=flash")

    assert refused(reply) and "flash" in reply
    assert schedule_of(key).due_at == before


@pytest.mark.parametrize("channel", ["instagram", "tiktok", "hubspot"])
def test_it_refuses_an_unknown_template(approve_channel, say, channel, request):
    request.getfixturevalue(
        {"instagram": "ig_account", "tiktok": "tt_account", "hubspot": "hs_account"}[channel]
    )
    key = approve_channel(channel)

    reply = say(key, "/automedia send template=nothing@r9")

    assert refused(reply) and "nothing@r9" in reply
    assert schedule_of(key).reason == "approval"


@pytest.mark.parametrize(
    ("channel", "label"), [("instagram", "Instagram"), ("tiktok", "TikTok"), ("hubspot", "HubSpot")]
)
def test_it_refuses_when_the_channel_has_no_account(approve_channel, say, tenant, channel, label):
    key = approve_channel(channel)

    reply = say(key, "/automedia send template=post")

    assert refused(reply)
    assert f"{label} のアカウントが設定されていません" in reply and f"add_channel acme {channel}" in reply
    assert schedule_of(key).reason == "approval"


def test_it_names_every_problem_of_an_instagram_send_at_once(approve_channel, ig_account, say):
    key = approve_channel("instagram")
    channel_template(
        "instagram",
        {"type": "image", "caption": "{{ missing }}", "image_url": "http://insecure.example.jp/a.jpg"},
        name="bad",
    )
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=NOW - timedelta(days=1))

    reply = say(key, "/automedia send template=bad audience=tag:vip")

    assert refused(reply)
    assert "missing" in reply  # the variable the issue does not have
    assert "有効期限" in reply and "切れています" in reply  # the long-lived token
    assert "Instagram では audience を指定できません" in reply


def test_it_refuses_an_account_whose_token_was_found_invalid(approve_channel, hs_account, say):
    ChannelAccount.objects.filter(pk=hs_account.pk).update(token_invalid_at=NOW - timedelta(hours=1))
    key = approve_channel("hubspot")

    reply = say(key, "/automedia send template=post")

    assert refused(reply) and "HubSpot のトークンが無効になっています" in reply


def test_it_refuses_a_hubspot_template_that_does_not_fit_the_accounts_mode(approve_channel, hs_account, say):
    ChannelAccount.objects.filter(pk=hs_account.pk).update(hubspot_mode="email")
    key = approve_channel("hubspot")

    reply = say(key, "/automedia send template=post")

    assert refused(reply) and "type「note」" in reply and "モード「email」" in reply


def test_it_refuses_a_tiktok_account_that_cannot_renew_its_token(approve_channel, tt_account, say):
    ChannelAccount.objects.filter(pk=tt_account.pk).update(
        expires_at=NOW - timedelta(hours=1), refresh_expires_at=NOW - timedelta(days=1)
    )
    key = approve_channel("tiktok")

    reply = say(key, "/automedia send template=post")

    assert refused(reply) and "リフレッシュトークンの有効期限" in reply


def test_it_does_not_send_again_while_a_tiktok_upload_is_processing(approve_channel, tt_account, tiktok, say):
    key = approve_channel("tiktok")
    assert fire(key).startswith("waiting")  # init done, TikTok is processing the upload
    publish_id = ChannelPost.objects.get(task__issue_key=key).publish_id

    reply = say(key, "/automedia send template=post")

    assert refused(reply) and "TikTok への投稿を処理中です" in reply and publish_id in reply
    assert fire_until_done(key) == "delivered"
    assert len(tiktok.inits()) == 1


# -- preview --------------------------------------------------------------------------------


def test_it_previews_an_instagram_post_and_says_its_audience_is_the_followers(
    approve_channel, ig_account, instagram, say
):
    key = approve_channel("instagram")
    asked_at_approval = len(instagram.calls())

    reply = say(key, "/automedia preview")

    assert reply.startswith("[automedia] プレビュー")
    assert "- チャネル: Instagram（アカウント: ig_user_id 17841400000000001）" in reply
    assert "- 配信先: アカウントのフォロワーなど" in reply and "人数は数えません" in reply
    assert "配信先: 0" not in reply and "LINE への送信" not in reply
    assert "投稿内容（Instagram 画像の投稿）" in reply
    assert "キャプション: 2026-12-10 新作公開！" in reply and "画像: https://cdn.example.jp/new.jpg" in reply
    assert '"image_url": "https://cdn.example.jp/new.jpg"' in reply  # the JSON sent
    assert "問題: なし" in reply
    # A preview publishes nothing: it reads only the publishing limit, as an approval does.
    assert [r.path for r in instagram.calls()[asked_at_approval:]] == [
        "/v25.0/17841400000000001/content_publishing_limit"
    ]
    assert "Instagram の投稿枠: 2026-12-10 10:00:00 (JST) までの 24 時間で 1 / 50 件" in reply


def test_it_previews_a_tiktok_post_with_the_creator_and_the_bodys_choices(approve_channel, tt_account, say):
    key = approve_channel("tiktok")

    reply = say(key, "/automedia preview")

    assert "- チャネル: TikTok（アカウント: デモ（@automedia_demo）（open_id open-id-1））" in reply
    assert (
        "公開範囲 SELF_ONLY（自分のみ）、コメント 不可、デュエット 不可、スティッチ 不可、商用コンテンツ なし"
        in reply
    )
    assert "このクリエイターが使える公開範囲: SELF_ONLY（自分のみ）" in reply and "人数は数えません" in reply
    assert "TikTok クリエイター: デモ（@automedia_demo）、使える公開範囲: SELF_ONLY（自分のみ）" in reply
    assert "タイトル: 2026-12-10 の新作" in reply and "動画: https://cdn.example.jp/new.mp4" in reply


def test_it_previews_a_hubspot_note_with_the_count_of_its_contacts(approve_channel, hs_account, hubspot, say):
    key = approve_channel("hubspot")

    reply = say(key, "/automedia preview")

    assert (
        "- 配信先: HubSpot のコンタクト 2 件（対象タグ: tag:active, !tag:opt_out、プロパティ automedia_tags）"
        "に CRM ノート 1 件を関連付け"
    ) in reply
    assert "本文: <p>2026-12-10 新作を配信しました</p>" in reply
    assert [r.method for r in hubspot.calls()] == ["GET"]  # the contacts, read only
    assert hubspot.notes == {} and not DeliveryAttempt.objects.exists()  # nothing recorded as sent


def test_it_previews_hubspot_emails_and_the_contacts_without_an_address(
    approve_channel, hs_account, hubspot, say
):
    ChannelAccount.objects.filter(pk=hs_account.pk).update(hubspot_mode="email")
    hubspot.add_contact("", ["active"])
    key = approve_channel("hubspot", content={"type": "email", "email_id": 4242})

    reply = say(key, "/automedia preview")

    assert "HubSpot のコンタクト 3 件（" in reply
    assert "に 1 通ずつメールを送信。メールアドレスのない 1 件には送られません" in reply
    assert "HubSpot のメールID: 4242" in reply and "問題: なし" in reply


def test_it_names_the_contacts_it_could_not_count(approve_channel, hs_account, hubspot, say):
    key = approve_channel("hubspot")
    hubspot.fail_next(503, count=5)

    reply = say(key, "/automedia preview")

    assert "件数を HubSpot から取得できませんでした" in reply and "問題: なし" in reply


def test_it_says_when_no_hubspot_contact_matches(approve_channel, hs_account, say):
    key = approve_channel("hubspot", body=channel_body("hubspot", audience="tag:nobody"))

    reply = say(key, "/automedia preview")

    assert "HubSpot のコンタクト 0 件（" in reply and "対象者がいません" in reply


def test_it_previews_the_post_of_a_channel_without_an_account(approve_channel, say):
    key = approve_channel("instagram")

    reply = say(key, "/automedia preview")

    assert "アカウント: 未設定" in reply and "Instagram のアカウントが設定されていません" in reply
    assert "キャプション: 2026-12-10 新作公開！" in reply


def test_it_stops_counting_a_large_crm_and_says_so(approve_channel, hs_account, hubspot, say, monkeypatch):
    from deliveries.channels.hubspot import publisher

    monkeypatch.setattr(publisher, "PREVIEW_PAGES", 1)
    for n in range(120):  # two pages of contacts
        hubspot.add_contact(f"more{n}@example.jp", ["active"])
    key = approve_channel("hubspot")

    reply = say(key, "/automedia preview")

    assert "HubSpot のコンタクト 98 件 以上（途中まで数えました）" in reply  # of the first 100
    assert "問題: なし" in reply

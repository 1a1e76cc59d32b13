"""The preview page: LINE-style bubbles, audience, due time, quiet-hours verdict, raw JSON one click away."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
import respx
import time_machine
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from console.preview import bubble, post_card
from core.models import Tenant
from core.timeutil import JST
from line.messages import MESSAGE_TYPES
from linepush.models import LinePushItem
from tests.helpers.backlog import body
from tests.helpers.channels import channel_body, channel_template
from tests.helpers.console import mirrored_issue, task_url

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
BANNER = "https://example.jp/banner.png"


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


def with_banner() -> str:
    return body() + f"\n## 添付\n- 画像: {BANNER}\n"


def test_it_draws_the_messages_as_chat_bubbles(as_manager, fake_backlog, pump, tenant, template, contacts):
    Tenant.objects.filter(pk=tenant.pk).update(preview_image_hosts="example.jp")  # else held
    task = mirrored_issue(fake_backlog, pump, tenant, description=with_banner())

    response = as_manager.get(task_url("preview", task))

    page = response.content.decode()
    assert response.status_code == 200
    assert '<div class="am-bubble" data-kind="text">' in page
    assert "2026-12-10 の営業時間は 7:00-18:00 です" in page
    assert f'<img src="{BANNER}"' in page
    assert "3 人に配信" in page  # 3 active contacts without opt_out, not blocked
    assert "2026-12-10 10:00:00 (JST)（承認すると予約されます）" in page
    assert "対象外（配信できる時間です）" in page


def test_it_keeps_the_raw_json_one_click_away_for_a_superuser_only(
    client, superuser, as_manager, fake_backlog, pump, tenant, template, contacts
):
    task = mirrored_issue(fake_backlog, pump, tenant)
    managers = as_manager.get(task_url("preview", task)).content.decode()
    client.force_login(superuser)

    page = client.get(task_url("preview", task)).content.decode()

    assert 'id="preview-json"' not in managers and '"type"' not in managers.replace("&quot;", '"')

    start = page.index('<details class="am-json" id="preview-json">')
    raw = page[page.index("<pre>", start) + 5 : page.index("</pre>", start)]
    messages = json.loads(raw.replace("&quot;", '"').replace("&#x27;", "'"))
    assert messages == [{"type": "text", "text": "2026-12-10 の営業時間は 7:00-18:00 です"}]


def test_it_shows_the_quiet_hours_verdict(as_manager, fake_backlog, pump, tenant, template, contacts):
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={"enabled": True, "ranges": [{"from": "09:00", "to": "11:00"}]}
    )
    task = mirrored_issue(fake_backlog, pump, tenant)

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'class="am-quiet-inside"' in page and "静粛時間帯" in page


def test_it_gives_the_quiet_hours_verdict_in_english_when_the_browser_asks(
    as_manager, fake_backlog, pump, tenant, template, contacts
):
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={"enabled": True, "ranges": [{"from": "09:00", "to": "11:00"}]}
    )
    task = mirrored_issue(fake_backlog, pump, tenant)

    page = as_manager.get(task_url("preview", task), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "The publish time 2026-12-10 10:00 (JST) falls in the quiet hours 09:00–11:00" in page
    assert "静粛時間帯 09:00" not in page


def test_it_names_the_problems(as_manager, fake_backlog, pump, tenant, template, contacts):
    task = mirrored_issue(fake_backlog, pump, tenant, description=body(template="missing@r9"))

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'id="preview-problems"><ul class="am-errors">' in page and "missing" in page


def test_it_says_when_backlog_no_longer_has_the_issue(as_manager, fake_backlog, pump, tenant, template):
    task = mirrored_issue(fake_backlog, pump, tenant)
    fake_backlog.delete_issue(task.issue_key)

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'id="preview-error"' in page and "Backlog にこの課題がありません" in page


def test_it_says_when_backlog_cannot_be_read(as_manager, fake_backlog, pump, tenant, template):
    task = mirrored_issue(fake_backlog, pump, tenant)
    fake_backlog.fail_next(503, count=10)

    response = as_manager.get(task_url("preview", task))

    assert response.status_code == 200
    assert "Backlog から課題を読めませんでした" in response.content.decode()


@pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx
def test_it_says_when_backlog_answers_200_with_no_json(as_manager, fake_backlog, pump, tenant, template):
    task = mirrored_issue(fake_backlog, pump, tenant)
    with respx.mock(assert_all_called=False) as router:
        issue = router.get(path__regex=rf"^/api/v2/issues/{task.issue_key}$").respond(
            200, text="<html>メンテナンス中</html>", headers={"Content-Type": "text/html; charset=utf-8"}
        )
        router.route().pass_through()
        response = as_manager.get(task_url("preview", task))

    assert response.status_code == 200 and issue.called
    assert (
        "Backlog から課題を読めませんでした: Backlog API エラー (HTTP 200): 応答が JSON ではありません（text/html）"
        in response.content.decode()
    )


def test_it_draws_a_carousel_as_cards():
    drawn = bubble(
        {
            "type": "template",
            "altText": "新作のご案内",
            "template": {
                "type": "carousel",
                "columns": [
                    {
                        "thumbnailImageUrl": "https://example.jp/a.png",
                        "title": "A",
                        "text": "一枚目",
                        "actions": [{"label": "詳しく"}],
                    },
                    {"title": "B", "text": "二枚目", "actions": []},
                ],
            },
        }
    )

    assert drawn["kind"] == "cards" and drawn["alt"] == "新作のご案内"
    assert [c["title"] for c in drawn["cards"]] == ["A", "B"]
    assert (
        drawn["cards"][0]["actions"] == ["詳しく"]
        and drawn["cards"][0]["image"]["url"] == "https://example.jp/a.png"
    )


def test_it_draws_the_texts_of_a_flex_message():
    drawn = bubble(
        {
            "type": "flex",
            "altText": "お知らせ",
            "contents": {
                "type": "bubble",
                "body": {"type": "box", "contents": [{"type": "text", "text": "本日 18 時から"}]},
            },
        }
    )

    assert (drawn["kind"], drawn["texts"]) == ("flex", ["本日 18 時から"])


def test_it_draws_quick_replies_and_never_an_unsafe_url():
    drawn = bubble(
        {
            "type": "image",
            "originalContentUrl": "javascript:alert(1)",
            "quickReply": {"items": [{"type": "action", "action": {"type": "message", "label": "参加する"}}]},
        }
    )

    assert drawn["src"] is None and drawn["quick_replies"] == ["参加する"]


# -- Instagram / TikTok / HubSpot: one post card, not LINE bubbles ---------------------------


def channel_task(fake_backlog, pump, tenant, channel: str, content: dict | None = None):
    channel_template(channel, content)
    return mirrored_issue(fake_backlog, pump, tenant, description=channel_body(channel))


def test_it_draws_an_instagram_post_as_a_post_card(as_manager, fake_backlog, pump, tenant, ig_account):
    Tenant.objects.filter(pk=tenant.pk).update(preview_image_hosts="cdn.example.jp")
    task = channel_task(fake_backlog, pump, tenant, "instagram")

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'id="post-preview" data-channel="instagram"' in page and 'id="line-preview"' not in page
    assert '<img src="https://cdn.example.jp/new.jpg"' in page
    assert "2026-12-10 新作公開！" in page and "Instagram 画像の投稿" in page
    assert "ig_user_id 17841400000000001" in page
    audience = page[page.index('id="preview-audience">') :]
    assert (
        audience.startswith('id="preview-audience">アカウントのフォロワーなど')
        and "人数は数えません" in audience
    )
    assert "人に配信" not in page


def test_it_draws_a_tiktok_video_with_the_creator_and_the_bodys_choices(
    as_manager, fake_backlog, pump, tenant, tt_account
):
    task = channel_task(fake_backlog, pump, tenant, "tiktok")

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'data-channel="tiktok"' in page and 'data-kind="video"' in page
    assert "https://cdn.example.jp/new.mp4" in page and "2026-12-10 の新作" in page
    assert "<dt>公開範囲</dt><dd>SELF_ONLY（自分のみ（非公開））</dd>" in page
    assert "<dt>デュエットを無効にする</dt><dd>はい</dd>" in page
    assert "デモ（@automedia_demo）" in page
    assert "このクリエイターが使える公開範囲: SELF_ONLY（自分のみ）" in page


def test_it_shows_the_music_usage_confirmation_of_a_tiktok_post(
    as_manager, fake_backlog, pump, tenant, tt_account
):
    task = channel_task(fake_backlog, pump, tenant, "tiktok")
    lacking = channel_body("tiktok", tiktok={"音楽利用確認": None})
    other = mirrored_issue(fake_backlog, pump, tenant, description=lacking)

    page = as_manager.get(task_url("preview", task)).content.decode()
    refused = as_manager.get(task_url("preview", other)).content.decode()

    assert "商用コンテンツ なし、音楽利用確認 同意" in page
    assert "音楽利用確認 が必要です" not in page
    assert "TikTok の投稿には「## 配信メタ」の 音楽利用確認 が必要です" in refused


def test_it_counts_the_hubspot_contacts_of_a_note(as_manager, fake_backlog, pump, tenant, hs_account):
    task = channel_task(fake_backlog, pump, tenant, "hubspot")

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'data-channel="hubspot"' in page and "HubSpot CRM ノート" in page
    assert '<div class="am-post-text">2026-12-10 新作を配信しました</div>' in page  # the note's HTML as text
    assert "HubSpot のコンタクト 2 件" in page


def test_it_names_a_missing_channel_account_and_still_draws_the_post(as_manager, fake_backlog, pump, tenant):
    task = channel_task(fake_backlog, pump, tenant, "instagram")

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert "Instagram のアカウントが設定されていません" in page and "2026-12-10 新作公開！" in page


def test_it_draws_every_item_of_a_carousel_and_a_reels_cover():
    carousel = post_card(
        "instagram",
        {
            "type": "carousel",
            "caption": "三枚",
            "items": [
                {"image_url": "https://a.jp/1.jpg"},
                {"video_url": "https://a.jp/2.mp4"},
                {"image_url": "javascript:x"},
            ],
        },
    )
    reel = post_card(
        "instagram",
        {
            "type": "reel",
            "video_url": "https://a.jp/r.mp4",
            "cover_url": "https://a.jp/c.jpg",
            "share_to_feed": True,
        },
    )

    assert [(m["kind"], m["src"] and m["src"]["url"], m["url"]) for m in carousel["media"]] == [
        ("image", "https://a.jp/1.jpg", "https://a.jp/1.jpg"),
        ("video", None, "https://a.jp/2.mp4"),  # a video is named, not loaded
        ("image", None, "javascript:x"),  # never an unsafe URL
    ]
    assert carousel["text"] == "三枚" and carousel["fields"] == []
    assert reel["media"][0]["poster"]["url"] == "https://a.jp/c.jpg"
    assert ("フィードにも表示", "はい") in reel["fields"] and reel["kind"] == "Instagram リール"


def test_it_shows_what_an_approval_would_check(
    as_manager, fake_backlog, pump, tenant, template, contacts, line
):
    line.set_quota(type="limited", value=200, total_usage=182)
    task = mirrored_issue(fake_backlog, pump, tenant)

    page = as_manager.get(task_url("preview", task)).content.decode()

    start = page.index('<td id="preview-checks">')
    checks = page[start : page.index("</td>", start)]
    assert "<li>LINE 検証: OK</li>" in checks
    assert (
        "<li>クォータ見込み: 3 通（今月 182 / LINE の上限 200）（プラン未設定のため LINE の上限 200 通で判定）</li>"
        in checks
    )
    assert [r.path for r in line.requests if "/validate/" in r.path] == ["/v2/bot/message/validate/multicast"]


def test_it_shows_the_send_time_under_the_bubbles(as_manager, fake_backlog, pump, tenant, template, contacts):
    task = mirrored_issue(fake_backlog, pump, tenant)

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert '<span class="am-time">10:00</span>' in page  # 投稿日時 2026-12-10 10:00, not now (09:00)
    assert '<div class="am-chat-date">12/10（木）</div>' in page


def test_it_shows_a_delivered_tasks_send_time_not_now(
    as_manager, fake_backlog, pump, tenant, template, contacts
):
    task = mirrored_issue(fake_backlog, pump, tenant, description=body(when="2026-11-30 18:30"))
    type(task).objects.filter(pk=task.pk).update(delivered_at=datetime(2026, 11, 30, 18, 30, 4, tzinfo=JST))

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert '<span class="am-time">18:30</span>' in page and '<span class="am-time">09:00</span>' not in page


# -- a stored post may hold anything LINE's checks at queueing did not look into -----------

FIELDS = ["text", "originalContentUrl", "previewImageUrl", "duration", "altText", "baseUrl", "template"]
FIELDS += ["contents", "columns", "actions", "action", "thumbnailImageUrl", "quickReply", "items", "label"]
ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.just("https://[x"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    message=st.fixed_dictionaries(
        {"type": st.sampled_from(MESSAGE_TYPES)}, optional=dict.fromkeys(FIELDS, ANY)
    )
)
def test_it_draws_a_message_of_any_shape_as_a_bubble(message):
    assert bubble(message)["kind"]


@pytest.mark.django_db
def test_a_group_posts_page_draws_fields_line_would_refuse(as_manager, tenant):
    item = LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="Cgroup",
        trigger_type="escalation",
        payload=[
            {"type": "text", "text": "明日の撮影", "quickReply": [None]},
            {"type": "audio", "originalContentUrl": "https://a.jp/a.m4a", "duration": "長い"},
            {"type": "template", "altText": "案内", "template": ["not", "an", "object"]},
        ],
        dedupe_key="odd-1",
        scheduled_at=NOW,
        status=LinePushItem.Status.WAITING_APPROVAL,
    )

    response = as_manager.get(reverse("admin:linepush_linepushitem_change", args=[item.pk]))

    assert response.status_code == 200 and "明日の撮影" in response.content.decode()

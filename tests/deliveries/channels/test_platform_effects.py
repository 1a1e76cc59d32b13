"""Effect measurement of Instagram / TikTok / HubSpot publications.

Planning goes through `deliver` with the fakes on loopback (as the channel tests do);
running a report is tested with respx (the exact platform request and Backlog comment),
and once per platform through the sandbox fakes, as `make run` does it.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import httpx
import pytest
import respx
import time_machine

from deliveries.channels.effect_reports import effect_reports_run
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import ContentTask, EffectReport
from tests.helpers.backlog import texts
from tests.helpers.channels import channel_body
from tests.helpers.deliveries import fire
from tests.helpers.factories import ChannelAccountFactory, ChannelPostFactory, EffectReportFactory

IG = "https://graph.instagram.test"
TT = "https://open.tiktokapis.test"
BACKLOG = "https://acme.backlog.jp"
MEDIA_ID = "17900000000000042"
VIDEO_ID = "7400000000000000042"
IG_METRICS = "views,reach,likes,comments,shares,saved,total_interactions"
TT_FIELDS = "id,share_url,view_count,like_count,comment_count,share_count"
PUBLIC_TIKTOK = channel_body("tiktok", tiktok={"公開範囲": "PUBLIC_TO_EVERYONE"})
EMAIL = {"type": "email", "email_id": 4242}


def run_at(when: datetime) -> int:
    with time_machine.travel(when, tick=True):
        return effect_reports_run()


def reports_of(key: str) -> list[EffectReport]:
    return list(EffectReport.objects.filter(task__issue_key=key).order_by("due_at"))


def effect_comments(fake_backlog, key: str) -> list[str]:
    return [t for t in texts(fake_backlog, key) if t.startswith("[automedia] 効果測定")]


# -- planning, through deliver ------------------------------------------------------------


def test_it_plans_a_24h_and_a_72h_report_after_an_instagram_post(approve_channel, ig_account):
    key = approve_channel("instagram")

    assert fire(key) == "delivered"

    task = ContentTask.objects.get(issue_key=key)
    post = ChannelPost.objects.get(task=task)
    assert [
        (r.channel, r.label, r.due_at - task.delivered_at, r.post_id, r.unit) for r in reports_of(key)
    ] == [
        ("instagram", "24h", timedelta(hours=24), post.pk, ""),
        ("instagram", "72h", timedelta(hours=72), post.pk, ""),
    ]


def test_it_plans_a_24h_and_a_72h_report_after_a_public_tiktok_post(approve_channel, tiktok, tt_account):
    tiktok.accounts["open-id-1"].privacy_level_options = ["PUBLIC_TO_EVERYONE", "SELF_ONLY"]
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok", body=PUBLIC_TIKTOK)

    assert fire(key) == "delivered"

    assert ChannelPost.objects.get(task__issue_key=key).post_id
    assert [(r.channel, r.label) for r in reports_of(key)] == [("tiktok", "24h"), ("tiktok", "72h")]


def test_it_plans_nothing_for_a_tiktok_post_without_a_public_id(approve_channel, tiktok, tt_account):
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok")  # SELF_ONLY: TikTok gives no publicaly_available_post_id

    assert fire(key) == "delivered"

    assert ChannelPost.objects.get(task__issue_key=key).post_id == ""
    assert reports_of(key) == []


def test_it_plans_one_24h_report_after_a_hubspot_email(approve_channel, hs_account):
    ChannelAccount.objects.filter(pk=hs_account.pk).update(
        hubspot_mode="email", hubspot_email_from="info@example.jp"
    )
    key = approve_channel("hubspot", content=EMAIL)

    assert fire(key) == "delivered"

    assert [(r.channel, r.label, r.recipients) for r in reports_of(key)] == [("hubspot", "24h", 2)]


def test_it_plans_nothing_after_a_hubspot_note(approve_channel, hs_account):
    key = approve_channel("hubspot")

    assert fire(key) == "delivered"

    assert ChannelPost.objects.get(task__issue_key=key).note_id
    assert reports_of(key) == []


# -- running, through the sandbox fakes ------------------------------------------------------


def test_the_fake_instagram_serves_insights_for_an_effect_comment(
    approve_channel, ig_account, instagram, fake_backlog
):
    key = approve_channel("instagram")
    fire(key)
    [media] = instagram.published()

    assert run_at(ContentTask.objects.get(issue_key=key).delivered_at + timedelta(hours=24)) == 1

    [comment] = effect_comments(fake_backlog, key)
    assert f"投稿ID: {media['id']}" in comment and f"- パーマリンク: {media['permalink']}" in comment
    assert "- 閲覧数（views）: 1,240 回" in comment and "- リーチ（見たアカウント数）: 980 人" in comment


def test_the_fake_tiktok_serves_video_statistics_for_an_effect_comment(
    approve_channel, tiktok, tt_account, fake_backlog
):
    tiktok.accounts["open-id-1"].privacy_level_options = ["PUBLIC_TO_EVERYONE", "SELF_ONLY"]
    tiktok.processing_fetches = 0
    key = approve_channel("tiktok", body=PUBLIC_TIKTOK)
    fire(key)
    post_id = ChannelPost.objects.get(task__issue_key=key).post_id
    tiktok.set_video_stats(post_id, view_count=5000)

    assert run_at(ContentTask.objects.get(issue_key=key).delivered_at + timedelta(hours=24)) == 1

    [comment] = effect_comments(fake_backlog, key)
    assert f"- URL: https://www.tiktok.com/@automedia_demo/video/{post_id}" in comment
    assert "- 再生数: 5,000 回" in comment and "- いいね: 154 件" in comment


# -- running, with respx -----------------------------------------------------------------------


@pytest.fixture
def http(db, settings, httpx_engine):  # respx sees only httpx
    settings.INSTAGRAM_GRAPH_BASE_URL = IG
    settings.INSTAGRAM_GRAPH_API_VERSION = "v25.0"
    settings.TIKTOK_API_BASE_URL = TT
    with respx.mock(assert_all_called=False) as router:
        router.post(url__regex=rf"^{BACKLOG}/api/v2/issues/[^/]+/comments").respond(201, json={"id": 1})
        yield router


def posted_comments(http) -> list[str]:
    return [
        parse_qs(call.request.content.decode())["content"][0]
        for call in http.calls
        if call.request.url.path.endswith("/comments")
    ]


def ig_report(*, kind: str = "image", label: str = "24h") -> EffectReport:
    post = ChannelPostFactory(post_id=MEDIA_ID, details={"content": {"type": kind}})
    ChannelAccountFactory(tenant=post.tenant, channel="instagram", access_token="ig-token")
    return EffectReportFactory(post=post, label=label)


def tt_report() -> EffectReport:
    post = ChannelPostFactory(
        channel="tiktok",
        post_id=VIDEO_ID,
        permalink=f"https://www.tiktok.com/@talent/video/{VIDEO_ID}",
        details={"content": {"type": "video"}},
    )
    ChannelAccountFactory(
        tenant=post.tenant,
        channel="tiktok",
        access_token="tt-token",
        expires_at=datetime(2027, 1, 31, tzinfo=UTC),
    )
    return EffectReportFactory(post=post)


def insights(**figures: int) -> dict:
    return {
        "data": [
            {"name": name, "period": "lifetime", "values": [{"value": value}], "id": f"{MEDIA_ID}/{name}"}
            for name, value in figures.items()
        ]
    }


IG_FIGURES = {
    "views": 1240,
    "reach": 980,
    "likes": 86,
    "comments": 7,
    "shares": 5,
    "saved": 12,
    "total_interactions": 110,
}


def test_it_comments_an_instagram_posts_insights_and_permalink(http):
    report = ig_report()
    route = http.get(f"{IG}/v25.0/{MEDIA_ID}/insights").respond(200, json=insights(**IG_FIGURES))

    assert run_at(report.due_at) == 1

    request = route.calls.last.request
    assert request.url.params["metric"] == IG_METRICS
    assert request.headers["authorization"] == "Bearer ig-token"
    [comment] = posted_comments(http)
    assert comment.splitlines()[:3] == [
        "[automedia] 効果測定 (24h)",
        f"配信から 24 時間後の Instagram 集計です（投稿ID: {MEDIA_ID}、2026-12-11 10:00:00 (JST) 時点の累計）。",
        f"- パーマリンク: {report.post.permalink}",
    ]
    assert "- 閲覧数（views）: 1,240 回" in comment and "- 保存: 12 件" in comment
    assert "- 反応の合計（いいね・コメント・保存・シェアなど）: 110 件" in comment
    assert "集計なし" not in comment
    report.refresh_from_db()
    assert report.done_at is not None and report.result["metrics"]["views"] == 1240


def test_it_asks_a_reel_for_its_average_watch_time_too(http):
    report = ig_report(kind="reel")
    route = http.get(f"{IG}/v25.0/{MEDIA_ID}/insights").respond(
        200, json=insights(**IG_FIGURES, ig_reels_avg_watch_time=5400)
    )

    run_at(report.due_at)

    assert route.calls.last.request.url.params["metric"] == IG_METRICS + ",ig_reels_avg_watch_time"
    assert "- 平均視聴時間: 5.4 秒" in posted_comments(http)[0]


def test_it_shows_a_figure_instagram_left_out_as_not_available_not_zero(http):
    report = ig_report()
    figures = {k: v for k, v in IG_FIGURES.items() if k != "shares"}
    http.get(f"{IG}/v25.0/{MEDIA_ID}/insights").respond(200, json=insights(**figures))

    run_at(report.due_at)

    [comment] = posted_comments(http)
    assert "- シェア: 集計なし" in comment and "シェア: 0" not in comment
    assert "0 という意味ではありません" in comment
    assert "最大 48 時間遅れて" in comment


def test_it_says_so_when_instagram_does_not_support_the_insights(http):
    report = ig_report()
    http.get(f"{IG}/v25.0/{MEDIA_ID}/insights").respond(
        400,
        json={"error": {"message": "(#100) metric[0] must be one of the following values", "code": 100}},
    )

    assert run_at(report.due_at) == 1

    [comment] = posted_comments(http)
    assert f"- パーマリンク: {report.post.permalink}" in comment
    assert "- 統計: 集計なし（Instagram が統計を返しませんでした。" in comment
    assert "metric[0] must be one of the following values" in comment
    report.refresh_from_db()
    assert report.done_at is not None and report.attempts == 0


def assert_retried_in_an_hour(report: EffectReport, when: datetime, error: str) -> None:
    report.refresh_from_db()
    assert (report.attempts, report.done_at) == (1, None)
    assert error in report.last_error
    assert abs(report.due_at - (when + timedelta(hours=1))) < timedelta(seconds=5)


def test_an_expired_instagram_token_is_retried_an_hour_later_as_line_does(http):
    report = ig_report()
    http.get(f"{IG}/v25.0/{MEDIA_ID}/insights").respond(
        400, json={"error": {"message": "Session has expired", "type": "OAuthException", "code": 190}}
    )

    assert run_at(report.due_at) == 0

    assert_retried_in_an_hour(report, report.due_at, "認証エラー: Instagram のトークンが期限切れか無効です")
    assert posted_comments(http) == []


def test_a_rate_limited_instagram_read_is_retried_an_hour_later(http):
    report = ig_report()
    route = http.get(f"{IG}/v25.0/{MEDIA_ID}/insights")
    route.side_effect = [
        httpx.Response(400, json={"error": {"message": "Application request limit reached", "code": 4}}),
        httpx.Response(200, json=insights(**IG_FIGURES)),
    ]
    first = report.due_at

    assert run_at(first) == 0
    assert_retried_in_an_hour(report, first, "レート制限")
    assert run_at(first + timedelta(minutes=30)) == 0
    assert run_at(first + timedelta(hours=1, seconds=5)) == 1

    assert route.call_count == 2 and len(posted_comments(http)) == 1


def test_it_gives_up_after_5_failures_with_a_warning(http, caplog):
    report = ig_report()
    route = http.get(f"{IG}/v25.0/{MEDIA_ID}/insights").respond(500, json={"error": {"code": 2}})
    when = report.due_at

    with caplog.at_level(logging.WARNING, logger="deliveries.channels.effect_reports"):
        for attempt in range(6):
            run_at(when + timedelta(hours=attempt, seconds=5 * attempt))

    report.refresh_from_db()
    assert (report.attempts, report.done_at) == (5, None)
    assert "given up after 5 attempts" in caplog.text
    assert route.call_count == 5 and posted_comments(http) == []


def test_it_comments_a_tiktok_videos_statistics(http):
    report = tt_report()
    video = {
        "id": VIDEO_ID,
        "share_url": f"https://www.tiktok.com/@talent/video/{VIDEO_ID}?share=1",
        "view_count": 23100,
        "like_count": 1540,
        "comment_count": 12,
        "share_count": 9,
    }
    route = http.post(f"{TT}/v2/video/query/").respond(
        200, json={"data": {"videos": [video], "cursor": 0, "has_more": False}, "error": {"code": "ok"}}
    )

    assert run_at(report.due_at) == 1

    request = route.calls.last.request
    assert request.url.params["fields"] == TT_FIELDS
    assert json.loads(request.content) == {"filters": {"video_ids": [VIDEO_ID]}}
    assert request.headers["authorization"] == "Bearer tt-token"
    [comment] = posted_comments(http)
    assert comment.splitlines()[1].startswith(f"配信から 24 時間後の TikTok 集計です（投稿ID: {VIDEO_ID}、")
    assert f"- URL: {video['share_url']}" in comment
    assert "- 再生数: 23,100 回" in comment and "- いいね: 1,540 件" in comment
    assert "- コメント: 12 件" in comment and "- シェア: 9 件" in comment


def test_it_says_so_when_tiktok_does_not_return_the_video(http):
    report = tt_report()
    http.post(f"{TT}/v2/video/query/").respond(
        200, json={"data": {"videos": [], "cursor": 0, "has_more": False}, "error": {"code": "ok"}}
    )

    assert run_at(report.due_at) == 1

    [comment] = posted_comments(http)
    assert f"- URL: {report.post.permalink}" in comment
    assert "- 統計: 集計なし（TikTok がこの動画を返しませんでした。" in comment
    assert "再生数: 0" not in comment


def test_an_invalid_tiktok_token_is_retried_an_hour_later_as_line_does(http):
    report = tt_report()
    http.post(f"{TT}/v2/video/query/").respond(
        401, json={"data": {}, "error": {"code": "access_token_invalid", "message": "expired"}}
    )

    assert run_at(report.due_at) == 0

    assert_retried_in_an_hour(report, report.due_at, "認証エラー: TikTok のトークンが期限切れか無効です")
    assert posted_comments(http) == []


def test_a_rate_limited_tiktok_query_is_retried_an_hour_later(http):
    report = tt_report()
    http.post(f"{TT}/v2/video/query/").respond(
        429, json={"data": {}, "error": {"code": "rate_limit_exceeded", "message": "slow down"}}
    )

    assert run_at(report.due_at) == 0

    assert_retried_in_an_hour(report, report.due_at, "レート制限")


def test_it_refreshes_an_expired_tiktok_token_before_the_query(http):
    report = tt_report()
    account = ChannelAccount.objects.get(tenant=report.tenant, channel="tiktok")
    ChannelAccount.objects.filter(pk=account.pk).update(
        refresh_token="rft-old", expires_at=report.due_at - timedelta(hours=1)
    )
    http.post(f"{TT}/v2/oauth/token/").respond(
        200, json={"access_token": "tt-new", "refresh_token": "rft-new", "expires_in": 7200}
    )
    route = http.post(f"{TT}/v2/video/query/").respond(
        200, json={"data": {"videos": []}, "error": {"code": "ok"}}
    )

    assert run_at(report.due_at) == 1

    assert route.calls.last.request.headers["authorization"] == "Bearer tt-new"
    account.refresh_from_db()
    assert (account.access_token, account.refresh_token) == ("tt-new", "rft-new")


def test_a_hubspot_email_report_gives_automedias_send_count_and_says_statistics_are_not_read(http):
    post = ChannelPostFactory(
        channel="hubspot",
        post_id="",
        permalink="",
        details={"content": {"type": "email", "email_id": 4242}, "summary": {"post_id": "4242", "sent": 2}},
    )
    report = EffectReportFactory(post=post, recipients=2)

    assert run_at(report.due_at) == 1

    [comment] = posted_comments(http)
    assert comment.splitlines() == [
        "[automedia] 効果測定 (24h)",
        "配信から 24 時間後の HubSpot 集計です（メールID: 4242）。",
        "- 送信数: 2 件（automedia の送信記録。sendId ごとに 1 通）",
        "- 開封・クリック: 集計なし（automedia は HubSpot のメール統計を読み込んでいません。"
        "HubSpot のマーケティングメールの分析画面で確認してください）",
    ]
    assert [c.request.url.host for c in http.calls] == ["acme.backlog.jp"]  # HubSpot is not called

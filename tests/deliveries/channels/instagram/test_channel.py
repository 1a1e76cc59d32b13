"""Instagram through `deliver`: fake Backlog and fake Instagram on loopback."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail

from core.timeutil import fmt_jst
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import DeliveryAttempt, DeliverySchedule
from tests.helpers.backlog import texts
from tests.helpers.channels import channel_body, channel_template
from tests.helpers.deliveries import DUE, fire

pytestmark = pytest.mark.usefixtures("ig_account")

PUBLISH = "/v25.0/17841400000000001/media_publish"
MEDIA = "/v25.0/17841400000000001/media"


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def post_of(key: str) -> ChannelPost:
    return ChannelPost.objects.get(task__issue_key=key)


def containers_created(instagram) -> int:
    return len([r for r in instagram.calls(MEDIA, "POST") if r.path == MEDIA and r.effect])


def test_it_publishes_once_and_comments_the_post_id_and_permalink(approve_channel, instagram, fake_backlog):
    key = approve_channel("instagram")

    assert fire(key) == "delivered"

    [media] = instagram.published()
    assert media["params"] == {
        "image_url": "https://cdn.example.jp/new.jpg",
        "caption": "2026-12-10 新作公開！",
    }
    post = post_of(key)
    assert (post.phase, post.post_id, post.permalink) == ("done", media["id"], media["permalink"])
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith("[automedia] 配信しました: 2026-12-10 10:00:")
    assert f"投稿ID: {media['id']}" in comment and f"パーマリンク: {media['permalink']}" in comment
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"
    assert schedule_of(key) is None


def test_it_records_every_platform_call(approve_channel, instagram):
    key = approve_channel("instagram")
    fire(key)

    endpoints = list(
        DeliveryAttempt.objects.filter(task__issue_key=key).order_by("id").values_list("endpoint", flat=True)
    )
    assert endpoints == [
        "/{ig-user-id}/content_publishing_limit",
        "/{ig-user-id}/media",
        "/{container-id}?fields=status_code",
        "/{ig-user-id}/content_publishing_limit",
        "/{ig-user-id}/media_publish",
        "/{ig-media-id}?fields=permalink",
    ]
    assert set(DeliveryAttempt.objects.values_list("channel", flat=True)) == {"instagram"}


def test_it_rechecks_a_young_container_every_two_seconds_then_about_once_a_minute(approve_channel, instagram):
    instagram.processing_polls = 100
    key = approve_channel("instagram")

    first = fire(key)
    soon = schedule_of(key).due_at
    results = [fire(key) for _ in range(30)]  # two-second looks for the container's first minute
    later = schedule_of(key).due_at
    fire(key)

    assert first.startswith("waiting until") and all(r.startswith("waiting until") for r in results)
    assert timedelta(seconds=1.9) < soon - DUE < timedelta(seconds=3)
    assert timedelta(seconds=59) < schedule_of(key).due_at - later < timedelta(seconds=62)
    assert schedule_of(key).attempts == 0  # waiting is not a retry
    instagram.processing_polls = 0
    for container in instagram.containers.values():
        container.polls_left = 0
    assert fire(key) == "delivered"
    assert containers_created(instagram) == 1 and len(instagram.published()) == 1


def test_it_gives_up_when_processing_takes_more_than_five_minutes(approve_channel, instagram, fake_backlog):
    instagram.processing_polls = 1000
    key = approve_channel("instagram")

    results = []
    while (schedule := schedule_of(key)) is not None:
        last = schedule.due_at
        results.append(fire(key))

    # Every two seconds in the first minute, then once a minute, until five minutes have passed.
    assert all(r.startswith("waiting") for r in results[:-1]) and results[-1] == "failed"
    assert len(results) < 40 and timedelta(minutes=5) <= last - DUE < timedelta(minutes=6)
    assert "5 分以内に終わりませんでした" in texts(fake_backlog, key)[-1]
    assert instagram.publish_calls() == []


def test_it_ends_in_error_with_the_reason_when_the_container_expired(
    approve_channel, instagram, fake_backlog
):
    instagram.processing_polls = 1
    key = approve_channel("instagram")
    assert fire(key).startswith("waiting")
    container = instagram.containers[post_of(key).container_id]
    container.created_at -= 25 * 3600

    assert fire(key) == "failed"
    comment = texts(fake_backlog, key)[-1]
    assert (
        comment.startswith("[automedia] 配信できませんでした: Instagram のコンテナ") and "有効期限" in comment
    )
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"


def test_it_ends_in_error_when_instagram_cannot_process_the_media(approve_channel, instagram, fake_backlog):
    instagram.fail_next_container("ERROR")
    key = approve_channel("instagram")

    assert fire(key) == "failed"
    assert "2207026" in texts(fake_backlog, key)[-1]
    assert instagram.publish_calls() == []


def test_a_publish_whose_answer_was_lost_is_read_back_and_not_repeated(
    approve_channel, instagram, fake_backlog
):
    key = approve_channel("instagram")
    instagram.fail_next(drop=True, path_prefix=PUBLISH)

    assert fire(key) == "retry in 30s"
    assert post_of(key).phase == "publishing"
    assert fire(key) == "delivered"

    assert len(instagram.publish_calls()) == 1 and instagram.double_publishes == 0
    assert len(instagram.published()) == 1
    assert "コンテナの状態 PUBLISHED で公開を確認しました" in texts(fake_backlog, key)[-1]


def test_a_publish_that_timed_out_is_read_back_and_not_repeated(approve_channel, instagram):
    key = approve_channel("instagram")
    instagram.fail_next(0, delay=1.0, path_prefix=PUBLISH)

    assert fire(key) == "retry in 30s"
    assert (
        DeliveryAttempt.objects.filter(endpoint="/{ig-user-id}/media_publish")
        .get()
        .error.startswith("タイムアウト")
    )
    assert fire(key) == "delivered"
    assert len(instagram.publish_calls()) == 1 and len(instagram.published()) == 1


def test_an_action_blocked_error_after_a_real_publish_is_read_back(approve_channel, instagram):
    """postiz-app#1681: 4/2207051 came back although the post went live."""
    key = approve_channel("instagram")
    instagram.fail_graph(4, "action is blocked", subcode=2207051, then_accept=True, path_prefix=PUBLISH)

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"
    assert len(instagram.publish_calls()) == 1 and len(instagram.published()) == 1


def test_a_publish_refused_before_it_happened_is_published_on_the_next_run(approve_channel, instagram):
    key = approve_channel("instagram")
    instagram.fail_graph(
        2, "Service temporarily unavailable", status=500, transient=True, path_prefix=PUBLISH
    )

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"

    assert len(instagram.publish_calls()) == 2  # the first never published: FINISHED was read back
    assert len(instagram.published()) == 1 and instagram.double_publishes == 0


def test_a_run_that_died_after_creating_the_container_reuses_it(approve_channel, instagram):
    key = approve_channel("instagram")
    # Every read of the first run loses its answer (the quota read, then the status read).
    # Not a count of two: libcurl sends a GET once more when a kept-alive connection dies.
    instagram.fail_next(drop=True, path_prefix="/v25.0/", method="GET", count=100)

    assert fire(key) == "retry in 30s"
    assert post_of(key).container_id
    instagram.clear_faults()
    assert fire(key) == "delivered"
    assert containers_created(instagram) == 1


def test_it_waits_for_quota_and_says_until_when(approve_channel, instagram, fake_backlog, tenant, ig_account):
    key = approve_channel("instagram")
    earlier = ChannelPost.objects.create(
        tenant=tenant,
        task=post_task(key),
        approval_seq=0,
        channel="instagram",
        phase="done",
        published_at=DUE - timedelta(hours=23),
    )
    instagram.quota_usage = 50

    result = fire(key)

    until = earlier.published_at + timedelta(hours=24)
    assert result.startswith("waiting until")
    assert schedule_of(key).due_at == until and schedule_of(key).attempts == 0
    comment = texts(fake_backlog, key)[-1]
    assert "投稿枠（24 時間で 50 件）を使い切っています" in comment and f"{fmt_jst(until)} ごろ" in comment
    assert containers_created(instagram) == 0 and instagram.publish_calls() == []
    assert fake_backlog.issue(key)["status"]["name"] == "automedia承認"

    instagram.quota_usage = 10
    assert fire(key) == "delivered"


def post_task(key: str):
    from deliveries.models import ContentTask

    return ContentTask.objects.get(issue_key=key)


def test_it_ends_in_error_with_a_token_notice_on_error_190(
    approve_channel, instagram, fake_backlog, ig_account
):
    instagram.expire_token("ig-long-lived-token")
    key = approve_channel("instagram")

    assert fire(key) == "failed"
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith(
        "[automedia] 配信できませんでした: 認証エラー: Instagram のトークンが期限切れか無効です。"
    )
    assert "Instagram のトークンが期限切れか無効です。管理画面の「チャネルアカウント」" in comment
    ig_account.refresh_from_db()
    assert ig_account.token_invalid_at is not None
    assert "Instagram トークンの更新が必要です" in mail.outbox[0].subject
    assert DeliveryAttempt.objects.count() == 1


def test_it_does_not_call_instagram_with_a_token_past_its_expiry(approve_channel, instagram, ig_account):
    ChannelAccount.objects.filter(pk=ig_account.pk).update(expires_at=DUE - timedelta(days=1))
    key = approve_channel("instagram")
    asked_at_approval = len(instagram.calls())  # the publishing limit, read while the token was valid

    assert fire(key) == "failed"
    assert len(instagram.calls()) == asked_at_approval and len(mail.outbox) == 1


@pytest.mark.parametrize("code", [4, 17, 32, 613])
def test_it_retries_rate_limited_calls_later(approve_channel, instagram, code):
    key = approve_channel("instagram")
    instagram.fail_graph(code, "Application request limit reached", path_prefix=MEDIA, method="POST")

    assert fire(key) == "retry in 30s"
    assert schedule_of(key).attempts == 1
    assert fire(key) == "delivered"


def test_it_ends_in_error_when_instagram_rejects_the_content(approve_channel, instagram, fake_backlog):
    instagram.unreachable_urls.add("https://cdn.example.jp/new.jpg")
    key = approve_channel("instagram")

    assert fire(key) == "failed"
    comment = texts(fake_backlog, key)[-1]
    assert "Instagram が受け付けませんでした" in comment and "9004/2207052" in comment
    assert schedule_of(key) is None


def test_it_rejects_a_bad_field_before_anything_is_sent(approve_channel, instagram, fake_backlog):
    key = approve_channel("instagram")
    # A newer revision after the approval (whose checks passed r1): the publisher checks it again.
    channel_template("instagram", {"type": "image", "caption": "x", "image_url": "{{ image }}"}, rev="r2")
    asked_at_approval = len(instagram.calls())

    assert fire(key) == "failed"
    assert "image_url「new.jpg」は https の公開 URL である必要があります" in texts(fake_backlog, key)[-1]
    assert len(instagram.calls()) == asked_at_approval


def test_it_publishes_a_carousel_from_child_containers(approve_channel, instagram):
    items = [{"image_url": "https://cdn.example.jp/1.jpg"}, {"video_url": "https://cdn.example.jp/2.mp4"}]
    key = approve_channel("instagram", content={"type": "carousel", "caption": "{{ date }}", "items": items})

    assert fire(key) == "delivered"

    post = post_of(key)
    assert len(post.children) == 2 and len(instagram.containers) == 3
    [media] = instagram.published()
    assert media["params"]["media_type"] == "CAROUSEL" and media["params"]["children"] == ",".join(
        post.children
    )
    assert instagram.containers[post.children[1]].params["media_type"] == "VIDEO"


def test_it_publishes_a_reel(approve_channel, instagram):
    content = {
        "type": "reel",
        "caption": "{{ date }}",
        "video_url": "https://cdn.example.jp/{{ video }}",
        "share_to_feed": True,
    }
    instagram.processing_polls = 1
    key = approve_channel("instagram", content=content)

    assert fire(key).startswith("waiting")
    assert fire(key) == "delivered"
    [media] = instagram.published()
    assert media["params"]["media_type"] == "REELS" and media["params"]["share_to_feed"] is True


def test_an_edit_after_the_publish_call_does_not_strand_the_post(approve_channel, instagram, fake_backlog):
    key = approve_channel("instagram")
    instagram.fail_next(drop=True, path_prefix=PUBLISH)
    assert fire(key) == "retry in 30s"
    fake_backlog.update_issue(key, description=channel_body("instagram").replace("new.jpg", "old.jpg"))

    assert fire(key) == "delivered"
    assert len(instagram.published()) == 1
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_a_preview_shows_the_post_without_line_audience_problems(approve_channel, fake_backlog, tenant):
    from backlog_bridge.client import BacklogClient
    from deliveries.approve.preview import preview_build, preview_comment
    from deliveries.issues import issue_read

    key = approve_channel(
        "instagram", body=channel_body("instagram", audience="").replace("- 対象タグ: \n", "")
    )
    with BacklogClient.for_tenant(tenant) as backlog:
        state = issue_read(client=backlog, issue_key=key)

    preview = preview_build(tenant=tenant, issue_key=key, state=state, now=DUE, review=False)

    assert preview.problems == []
    [message] = preview.messages
    assert (
        message["type"] == "instagram:image"
        and message["content"]["image_url"] == "https://cdn.example.jp/new.jpg"
    )
    comment = preview_comment(preview)
    assert "投稿内容（Instagram 画像の投稿）" in comment and "キャプション: 2026-12-10 新作公開！" in comment

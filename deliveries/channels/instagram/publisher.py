"""Publish one approval to Instagram exactly once.

1. read `content_publishing_limit`; over it, the row waits (before any container exists);
2. create the container(s), each id saved the moment it is returned;
3. read `status_code` now and then about once a minute for up to 5 minutes (Meta's advice),
   by re-scheduling the row, never by sleeping; EXPIRED / ERROR end the task;
4. read the quota again, mark the post PUBLISHING and call `media_publish`;
5. after an unclear `media_publish` the next run reads the container: PUBLISHED is done,
   FINISHED was not published, so publishing is safe.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Min

from core.timeutil import fmt_jst
from deliveries.channels.instagram.transport import FALLBACK_QUOTA, InstagramTransport, is_not_ready
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.posts import PostParts, post_outcome, post_outcome_lines
from deliveries.channels.publisher_base import (
    Context,
    Done,
    PublishFailed,
    Wait,
    account_for,
    post_for,
    record,
    recorded,
    save,
)

RECHECK = timedelta(seconds=60)
# While a container is young, its status is read this often, so that an image container made
# ahead is published the moment it is FINISHED; after FAST_PROCESSING, once a minute (Meta).
FAST_RECHECK = timedelta(seconds=2)
FAST_PROCESSING = timedelta(minutes=1)
PROCESSING_LIMIT = timedelta(minutes=5)
QUOTA_UNKNOWN_RECHECK = timedelta(hours=1)
Phase = ChannelPost.Phase


# -- what the rest of deliveries asks of this channel (deliveries/channels/publishing.py) --


_PARTS = PostParts(ChannelAccount.Channel.INSTAGRAM)
render, messages, send_problems = _PARTS.render, _PARTS.messages, _PARTS.send_problems
outcome, outcome_lines = post_outcome, post_outcome_lines


def publish(ctx: Context) -> Done | Wait:
    account = account_for(ctx.tenant, ChannelAccount.Channel.INSTAGRAM)
    _check_token(account, ctx.now)
    post = post_for(ctx, account)
    if post.phase == Phase.DONE:
        return _done(post)
    ig = InstagramTransport(token=account.access_token)
    try:
        return _step(ctx, ig, account, post)
    finally:
        ig.close()


def _step(ctx: Context, ig: InstagramTransport, account: ChannelAccount, post: ChannelPost) -> Done | Wait:
    if post.phase == Phase.PUBLISHING:
        return _after_unclear_publish(ctx, ig, account, post)
    if not post.container_id:
        if wait := _quota_wait(ctx, ig, account, post):
            return wait
        _create_containers(ctx, ig, account, post)
    if _known_finished(post, ctx.now):  # seen FINISHED ahead of the due second: publish now
        return _publish(ctx, ig, account, post)
    return _await_container(ctx, ig, account, post)


def _known_finished(post: ChannelPost, now: datetime) -> bool:
    """A container read FINISHED stays so until it is published or 24 hours old (EXPIRED);
    an hour's margin for the clock."""
    made = post.processing_since
    return post.platform_status == "FINISHED" and made is not None and now - made < timedelta(hours=23)


def prepare(ctx: Context) -> datetime | None:
    """Ahead of the due second: the container made and looked at until FINISHED (creating a
    container publishes nothing, and it stays valid for 24 hours). When to look again, or
    None once it is FINISHED, or when the due run has to decide (quota, a dead container)."""
    account = account_for(ctx.tenant, ChannelAccount.Channel.INSTAGRAM)
    _check_token(account, ctx.now)
    post = post_for(ctx, account)
    if post.is_committed() or _known_finished(post, ctx.now):
        return None
    ig = InstagramTransport(token=account.access_token)
    try:
        if not post.container_id:
            if _quota_wait(ctx, ig, account, post):
                return None  # the due run waits for the quota, and says so
            _create_containers(ctx, ig, account, post)
        code, _ = _read_status(ctx, ig, post)
    finally:
        ig.close()
    return ctx.now + FAST_RECHECK if code not in ("FINISHED", "EXPIRED", "ERROR", "PUBLISHED") else None


def account_problems(account: ChannelAccount, content: dict | None, now: datetime) -> list[str]:
    """What stops a post at this account, known without calling Instagram (commands, preview)."""
    try:
        _check_token(account, now)
    except PublishFailed as exc:
        return [exc.reason]
    return []


def _check_token(account: ChannelAccount, now: datetime) -> None:
    if account.ig_user_id == "":
        raise PublishFailed("Instagram ユーザーID（ig_user_id）が設定されていません。")
    if account.expires_at is not None and account.expires_at <= now:
        raise PublishFailed(
            f"認証エラー: Instagram の長期トークンの有効期限（{fmt_jst(account.expires_at)}）が切れています。",
            auth=True,
        )


# -- containers ----------------------------------------------------------------------


def _create_containers(
    ctx: Context, ig: InstagramTransport, account: ChannelAccount, post: ChannelPost
) -> None:
    content = ctx.content
    if content["type"] == "carousel":
        children = list(post.children)
        for item in content["items"][len(children) :]:
            children.append(_create(ctx, ig, account, _carousel_item(item)))
            save(post, children=children)
        params = {
            "media_type": "CAROUSEL",
            "children": ",".join(children),
            "caption": content.get("caption", ""),
        }
    elif content["type"] == "reel":
        params = {
            "media_type": "REELS",
            **_pick(content, "video_url", "caption", "cover_url", "share_to_feed"),
        }
    else:
        params = _pick(content, "image_url", "caption", "alt_text")
    container_id = _create(ctx, ig, account, params)
    save(post, container_id=container_id, phase=Phase.PROCESSING, processing_since=ctx.now, checks=0)


def _create(ctx: Context, ig: InstagramTransport, account: ChannelAccount, params: dict) -> str:
    """Creating a container publishes nothing: after an unclear answer a new one is safe."""
    ctx.check_claim()
    summary = {k: v for k, v in params.items() if k != "caption"}
    return recorded(
        ctx,
        ig,
        "/{ig-user-id}/media",
        lambda: ig.create_container(account.ig_user_id, params),
        summary=summary,
    )


def _carousel_item(item: dict) -> dict:
    # Carousel video items are still `media_type=VIDEO` (only single feed videos moved to REELS).
    if "video_url" in item:
        return {"is_carousel_item": True, "media_type": "VIDEO", "video_url": item["video_url"]}
    return {"is_carousel_item": True, "image_url": item["image_url"]}


def _pick(content: dict, *keys: str) -> dict:
    return {key: content[key] for key in keys if key in content}


def _await_container(
    ctx: Context, ig: InstagramTransport, account: ChannelAccount, post: ChannelPost
) -> Done | Wait:
    code, status = _read_status(ctx, ig, post)
    if code == "FINISHED":
        return _publish(ctx, ig, account, post)
    if code == "PUBLISHED":
        return _published_without_id(ctx, post)
    _fail_on_dead_container(post, code, status)
    if ctx.now - (post.processing_since or ctx.now) >= PROCESSING_LIMIT:
        raise PublishFailed(
            f"Instagram のメディア処理が {PROCESSING_LIMIT.seconds // 60} 分以内に終わりませんでした"
            f"（コンテナ {post.container_id}、状態 {code or '不明'}、確認 {post.checks} 回）。"
            "動画の長さ・形式を確認して、もう一度承認してください。"
        )
    young = ctx.now - (post.processing_since or ctx.now) < FAST_PROCESSING
    return Wait(
        ctx.now + (FAST_RECHECK if young else RECHECK),
        f"Instagram のメディア処理待ち（{code}、{post.checks} 回目の確認）",
    )


def _read_status(ctx: Context, ig: InstagramTransport, post: ChannelPost) -> tuple[str, str]:
    data = recorded(
        ctx,
        ig,
        "/{container-id}?fields=status_code",
        lambda: ig.container_status(post.container_id),
        key=post.container_id,
    )
    code, status = str(data.get("status_code") or ""), str(data.get("status") or "")
    save(post, platform_status=code, checks=post.checks + 1)
    return code, status


def _fail_on_dead_container(post: ChannelPost, code: str, status: str) -> None:
    if code == "EXPIRED":
        raise PublishFailed(
            f"Instagram のコンテナ {post.container_id} の有効期限（作成から 24 時間）が切れたため投稿できませんでした。"
            "もう一度承認すると新しいコンテナを作って投稿します。"
        )
    if code == "ERROR":
        raise PublishFailed(
            f"Instagram がメディアを処理できませんでした（コンテナ {post.container_id}、status: {status or '不明'}）。"
            "画像・動画の形式と URL（公開されていること）を確認してください。"
        )


# -- quota ---------------------------------------------------------------------------


def _quota_wait(
    ctx: Context, ig: InstagramTransport, account: ChannelAccount, post: ChannelPost
) -> Wait | None:
    try:
        used, total, window = recorded(
            ctx, ig, "/{ig-user-id}/content_publishing_limit", lambda: ig.publishing_limit(account.ig_user_id)
        )
    except PlatformError as exc:
        if exc.auth:
            raise
        # If the limit cannot be read, assume 50 (Meta's API references) and count our own posts.
        used, total, window = _own_posts(account, ctx.now, 86400), FALLBACK_QUOTA, 86400
    if used < total:
        return None
    until = _quota_free_at(account, ctx.now, window)
    first = post.waiting_until is None
    save(post, waiting_until=until)
    reason = f"Instagram の投稿枠（{window // 3600} 時間で {total} 件）を使い切っています（使用 {used} 件）"
    comment = f"[automedia] {reason}。{fmt_jst(until)} ごろ枠が空いてから投稿します。" if first else ""
    return Wait(until, reason, comment)


def _own_posts(account: ChannelAccount, now: datetime, window: int) -> int:
    return ChannelPost.objects.filter(
        tenant=account.tenant, channel=account.channel, published_at__gt=now - timedelta(seconds=window)
    ).count()


def _quota_free_at(account: ChannelAccount, now: datetime, window: int) -> datetime:
    """When automedia's oldest post in the window leaves it; others' posts are invisible to us."""
    oldest = ChannelPost.objects.filter(
        tenant=account.tenant, channel=account.channel, published_at__gt=now - timedelta(seconds=window)
    ).aggregate(first=Min("published_at"))["first"]
    if oldest is None:
        return now + QUOTA_UNKNOWN_RECHECK
    return max(oldest + timedelta(seconds=window), now + timedelta(minutes=1))


# -- publishing ----------------------------------------------------------------------


def _publish(ctx: Context, ig: InstagramTransport, account: ChannelAccount, post: ChannelPost) -> Done | Wait:
    if wait := _quota_wait(ctx, ig, account, post):
        return wait
    ctx.check_claim()
    save(post, phase=Phase.PUBLISHING)  # from here on, a retry reads the state first
    try:
        media_id = ig.publish(account.ig_user_id, post.container_id)
    except PlatformError as exc:
        record(ctx, ig, "/{ig-user-id}/media_publish", key=post.container_id, error=exc)
        return _publish_refused(ctx, post, exc)
    record(ctx, ig, "/{ig-user-id}/media_publish", key=post.container_id, summary={"media_id": media_id})
    save(post, post_id=media_id, phase=Phase.DONE, published_at=ctx.now)
    _read_permalink(ctx, ig, post)
    return _done(post)


def _publish_refused(ctx: Context, post: ChannelPost, exc: PlatformError) -> Wait:
    """Only a definite refusal puts the post back; anything unclear stays PUBLISHING."""
    if is_not_ready(exc):
        save(post, phase=Phase.PROCESSING)
        return Wait(ctx.now + RECHECK, "Instagram のメディアがまだ公開できる状態ではありません（9007）")
    if exc.permanent and not exc.unclear:
        save(post, phase=Phase.PROCESSING)
    raise exc


def _after_unclear_publish(
    ctx: Context, ig: InstagramTransport, account: ChannelAccount, post: ChannelPost
) -> Done | Wait:
    code, status = _read_status(ctx, ig, post)
    if code == "PUBLISHED":
        return _published_without_id(ctx, post)
    if code == "FINISHED":  # the publish did not happen: publishing now is not a double post
        return _publish(ctx, ig, account, post)
    _fail_on_dead_container(post, code, status)
    save(post, phase=Phase.PROCESSING)
    return Wait(ctx.now + RECHECK, f"Instagram のメディア処理待ち（{code}）")


def _published_without_id(ctx: Context, post: ChannelPost) -> Done:
    """PUBLISHED but the answer with the media id was lost: done; the id is not guessed.

    Third-party advice: https://github.com/trypostit/trypost/issues/281
    """
    save(post, phase=Phase.DONE, published_at=post.published_at or ctx.now)
    return _done(post)


def _read_permalink(ctx: Context, ig: InstagramTransport, post: ChannelPost) -> None:
    try:
        link = recorded(
            ctx, ig, "/{ig-media-id}?fields=permalink", lambda: ig.permalink(post.post_id), key=post.post_id
        )
    except PlatformError:
        return  # published all the same; the comment says the link is unknown
    save(post, permalink=link[:500])


def _done(post: ChannelPost) -> Done:
    lines = ["Instagram に投稿しました。"]
    if post.post_id:
        lines.append(f"投稿ID: {post.post_id}")
        lines.append(f"パーマリンク: {post.permalink or '取得できませんでした'}")
    else:
        lines.append(
            "投稿ID: 不明（公開の応答が届かなかったため、コンテナの状態 PUBLISHED で公開を確認しました）"
        )
    lines.append(f"コンテナID: {post.container_id}")
    return Done(
        {
            "platform": "Instagram",
            "post_id": post.post_id,
            "permalink": post.permalink,
            "container_id": post.container_id,
            "lines": lines,
        }
    )

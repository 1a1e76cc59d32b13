"""Publish one approval to TikTok (Direct Post, pulled from URL) exactly once.

`creator_info` before each post (the body's posting choices must be ones it allows), then
`init` with exactly those choices in `post_info`; its `publish_id`, the only handle on the
post, is saved at once and `status/fetch` is re-checked on the same row until
PUBLISH_COMPLETE or FAILED. A lost `init` answer cannot be read back, so the task ends in
automediaエラー asking a person to look in TikTok rather than posting twice. Per-token
limits are kept by counting automedia's own recorded calls; an expired token is refreshed once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Min
from django.utils.dateparse import parse_datetime

from core.timeutil import fmt_jst
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.posts import PostParts, post_outcome, post_outcome_lines
from deliveries.channels.publisher_base import (
    Context,
    Done,
    PublishFailed,
    Wait,
    Waiting,
    account_for,
    post_for,
    record,
    recorded,
    save,
)
from deliveries.channels.tiktok.choices import creator_problems, missing_choices, post_info
from deliveries.channels.tiktok.tokens import tiktok_access_token
from deliveries.channels.tiktok.transport import (
    CONTENT_INIT,
    CREATOR_INFO,
    PER_MINUTE,
    STATUS_FETCH,
    VIDEO_INIT,
    TikTokTransport,
)
from deliveries.channels.token_upkeep import RefreshBusy, RefreshFailed
from deliveries.models import DeliveryAttempt

RECHECKS = (15, 30, 60, 60, 120, 300, 600)  # seconds; then every LATE_RECHECK
LATE_RECHECK = 1800
# Moderation takes "sometimes hours":
# https://developers.tiktok.com/doc/content-posting-api-reference-get-video-status
PROCESSING_LIMIT = timedelta(hours=24)
REFRESH_BUSY_RECHECK = timedelta(seconds=5)
# A `creator_info` read ahead of the due second (`prepare`) stands in for the one before the
# init while it is this young: the creator's options are read again only when it is older.
INFO_FRESH = timedelta(minutes=2)
UNCLEAR_INIT = (
    "TikTok への投稿依頼（init）の応答が届かなかったため、投稿されたかどうか確認できません。"
    "二重投稿を避けるため自動では再投稿しません。TikTok アプリで投稿を確認し、投稿されていなければもう一度承認してください。"
)
Phase = ChannelPost.Phase


# -- what the rest of deliveries asks of this channel (deliveries/channels/publishing.py) --


_PARTS = PostParts(ChannelAccount.Channel.TIKTOK)
render, messages, send_problems = _PARTS.render, _PARTS.messages, _PARTS.send_problems
outcome, outcome_lines = post_outcome, post_outcome_lines


def publish(ctx: Context) -> Done | Wait:
    account = account_for(ctx.tenant, ChannelAccount.Channel.TIKTOK)
    post = post_for(ctx, account)
    if post.phase == Phase.DONE:
        return _done(post)
    try:
        return _with_token(ctx, account, post, force=False)
    except PlatformError as exc:
        if exc.code != "access_token_invalid":
            raise
        return _with_token(ctx, account, post, force=True)  # refresh once, then it is an auth error


def prepare(ctx: Context) -> datetime | None:
    """Ahead of the due second: `creator_info` read (and the body's choices checked against
    it) and kept on the post, so that at the second only the init is left. Anything in the
    way (a token being refreshed, a minute's limit, TikTok's error) is left to the due run."""
    account = account_for(ctx.tenant, ChannelAccount.Channel.TIKTOK)
    post = post_for(ctx, account)
    if post.is_committed() or post.publish_id:
        return None
    try:
        try:
            info = _info_ahead(ctx, account, post, force=False)
        except PlatformError as exc:
            if exc.code != "access_token_invalid":
                raise
            info = _info_ahead(ctx, account, post, force=True)  # refreshed once, as `publish` does
    except (RefreshBusy, RefreshFailed, Waiting, PlatformError):
        return None
    save(post, details={**post.details, "creator_info": info, "creator_info_at": ctx.now.isoformat()})
    return None


def _info_ahead(ctx: Context, account: ChannelAccount, post: ChannelPost, *, force: bool) -> dict:
    tt = TikTokTransport(token=tiktok_access_token(account, now=ctx.now, force=force))
    try:
        return _creator_info(ctx, tt, post, fresh=True)
    finally:
        tt.close()


def account_problems(account: ChannelAccount, content: dict | None, now: datetime) -> list[str]:
    """What stops a post at this account, known without calling TikTok (commands, preview).

    An expired access token is no problem while the refresh token can renew it; whether the
    body's posting choices are allowed is known only from `creator_info` (approval, publishing)."""
    if not account.open_id:
        return ["TikTok の open_id が設定されていません。"]
    if account.expires_at is None or account.expires_at > now:
        return []
    if not account.refresh_token:
        return ["TikTok のアクセストークンが期限切れで、リフレッシュトークンがありません。"]
    if account.refresh_expires_at is not None and account.refresh_expires_at <= now:
        return [
            f"TikTok のリフレッシュトークンの有効期限（{fmt_jst(account.refresh_expires_at)}）が切れています。"
            "TikTok アカウントを連携し直してください。"
        ]
    return []


def _with_token(ctx: Context, account: ChannelAccount, post: ChannelPost, *, force: bool) -> Done | Wait:
    try:
        token = tiktok_access_token(account, now=ctx.now, force=force)
    except RefreshBusy:
        return Wait(ctx.now + REFRESH_BUSY_RECHECK, "TikTok のトークンを別の処理が更新中です")
    except RefreshFailed as exc:
        raise PublishFailed(f"認証エラー: {exc.reason}", auth=True) from exc
    tt = TikTokTransport(token=token)
    try:
        return _step(ctx, tt, post)
    finally:
        tt.close()


def _step(ctx: Context, tt: TikTokTransport, post: ChannelPost) -> Done | Wait:
    if post.publish_id:
        return _await(ctx, tt, post)
    if post.phase == Phase.PUBLISHING:
        raise PublishFailed(UNCLEAR_INIT)
    return _init(ctx, tt, post)


def _init(ctx: Context, tt: TikTokTransport, post: ChannelPost) -> Done | Wait:
    content = ctx.content
    info = _creator_info(ctx, tt, post)
    endpoint = VIDEO_INIT if content["type"] == "video" else CONTENT_INIT
    if wait := _minute_wait(ctx, endpoint):
        return wait
    ctx.check_claim()
    save(post, phase=Phase.PUBLISHING)  # a lost answer from here on is not retried
    info_sent = post_info(content, _choices(ctx))
    try:
        publish_id = _call_init(tt, content, info_sent)
    except PlatformError as exc:
        record(ctx, tt, endpoint, error=exc)
        if exc.unclear:
            raise PublishFailed(f"{UNCLEAR_INIT}（{exc.message}）") from exc
        save(post, phase=Phase.NEW)  # TikTok answered: nothing was created
        raise
    record(
        ctx,
        tt,
        endpoint,
        key=publish_id,
        summary={"type": content["type"], "privacy_level": info_sent["privacy_level"]},
    )
    details = {**post.details, "creator_username": info.get("creator_username", "")}
    save(
        post,
        publish_id=publish_id,
        phase=Phase.PROCESSING,
        processing_since=ctx.now,
        checks=0,
        details=details,
    )
    return _await(ctx, tt, post)


def _call_init(tt: TikTokTransport, content: dict, info: dict) -> str:
    if content["type"] == "video":
        return tt.video_init(post_info=info, video_url=content["video_url"])
    return tt.photo_init(
        post_info=info, photo_urls=content["photo_urls"], cover_index=content.get("photo_cover_index", 0)
    )


def _creator_info(ctx: Context, tt: TikTokTransport, post: ChannelPost, *, fresh: bool = False) -> dict:
    info = None if fresh else _read_ahead(post, ctx.now)
    if info is None:
        if wait := _minute_wait(ctx, CREATOR_INFO):
            raise Waiting(wait)
        info = recorded(ctx, tt, CREATOR_INFO, tt.creator_info)
    choices = _choices(ctx)
    problems = missing_choices(choices, ctx.content["type"]) + creator_problems(choices, info)
    if problems:
        raise PublishFailed(
            " ".join(problems) + " 課題本文の「## 配信メタ」を直して、もう一度承認してください。"
        )
    return info


def _read_ahead(post: ChannelPost, now: datetime) -> dict | None:
    """The `creator_info` `prepare` read, while it is younger than INFO_FRESH."""
    read_at = parse_datetime(post.details.get("creator_info_at") or "")
    if read_at is None or now - read_at >= INFO_FRESH:
        return None
    return post.details.get("creator_info")


def _choices(ctx: Context) -> dict:
    """The posting choices of the approved body (its parse, kept on the task)."""
    return dict((ctx.task.parsed or {}).get("tiktok") or {})


def _await(ctx: Context, tt: TikTokTransport, post: ChannelPost) -> Done | Wait:
    if wait := _minute_wait(ctx, STATUS_FETCH):
        return wait
    data = recorded(ctx, tt, STATUS_FETCH, lambda: tt.status(post.publish_id), key=post.publish_id)
    status = str(data.get("status") or "")
    save(post, platform_status=status, checks=post.checks + 1)
    if status in ("PUBLISH_COMPLETE", "SEND_TO_USER_INBOX"):
        return _complete(ctx, post, data)
    if status == "FAILED":
        raise PublishFailed(
            f"TikTok で投稿の処理に失敗しました（publish_id {post.publish_id}、理由: {data.get('fail_reason') or '不明'}）。"
            "動画・写真の URL と形式を確認して、もう一度承認してください。"
        )
    if ctx.now - (post.processing_since or ctx.now) >= PROCESSING_LIMIT:
        raise PublishFailed(
            f"TikTok の処理が {PROCESSING_LIMIT.days * 24} 時間経っても終わりません（publish_id {post.publish_id}、状態 {status}）。"
            "TikTok アプリで投稿を確認してください。"
        )
    delay = RECHECKS[post.checks - 1] if post.checks <= len(RECHECKS) else LATE_RECHECK
    return Wait(
        ctx.now + timedelta(seconds=delay), f"TikTok の処理待ち（{status}、{post.checks} 回目の確認）"
    )


def _complete(ctx: Context, post: ChannelPost, data: dict) -> Done:
    ids = data.get("publicaly_available_post_id") or []  # sic: TikTok's spelling
    post_id = str(ids[0]) if ids else ""
    username = post.details.get("creator_username", "")
    link = f"https://www.tiktok.com/@{username}/video/{post_id}" if post_id and username else ""
    save(post, post_id=post_id, permalink=link, phase=Phase.DONE, published_at=ctx.now)
    return _done(post)


def _minute_wait(ctx: Context, endpoint: str) -> Wait | None:
    """TikTok's per-token per-minute limits, kept with automedia's own recorded calls."""
    since = ctx.now - timedelta(seconds=60)
    calls = DeliveryAttempt.objects.filter(
        tenant=ctx.tenant, channel="tiktok", endpoint=endpoint, created_at__gt=since
    )
    if calls.count() < PER_MINUTE[endpoint]:
        return None
    oldest = calls.aggregate(first=Min("created_at"))["first"]
    return Wait(
        oldest + timedelta(seconds=61), f"TikTok の 1 分あたりの呼び出し上限（{endpoint}）に合わせて待機"
    )


def _done(post: ChannelPost) -> Done:
    lines = ["TikTok に投稿しました。", f"publish_id: {post.publish_id}"]
    if post.post_id:
        lines.append(f"投稿ID: {post.post_id}")
        lines.append(f"URL: {post.permalink or '不明'}")
    else:
        lines.append("投稿ID: なし（非公開の投稿など、TikTok が公開 ID を返さない場合）")
    if post.platform_status == "SEND_TO_USER_INBOX":
        lines.append("（TikTok アプリの受信箱に送られました。アプリで公開を完了してください）")
    return Done(
        {
            "platform": "TikTok",
            "post_id": post.post_id,
            "permalink": post.permalink,
            "publish_id": post.publish_id,
            "lines": lines,
        }
    )

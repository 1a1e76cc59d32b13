"""A large tag's LINE delivery as one narrowcast to an audience of its user ids.

A narrowcast reaches an audience, not a list of ids, so the tag's user ids are uploaded as
one. Each step (upload, wait for the audience, send, read the progress) is one run of the
delivery's schedule with a `Wait` between, so no worker thread or database connection is
held while LINE works. The send carries the approval's `X-Line-Retry-Key`, so a resend after
a lost answer is never delivered twice. LINE's side: docs/OPERATIONS.md, "LINE narrowcast".
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction

from core.transport import SendResult, TransportError
from deliveries.channels.line.quota import quota_forecast
from deliveries.channels.models import ChannelPost
from deliveries.channels.publisher_base import Context, Done, PublishFailed, Wait, save
from deliveries.models import DeliveryAttempt
from line.transport import AUDIENCE_IDS_MAX, LineTransport, line_transport

logger = logging.getLogger(__name__)

LINE_MINIMUM = 50  # errorCode 4: "An audience of less than 50 recipients is included"
RECHECKS = (5, 10, 15, 30, 60, 120, 300)  # seconds between looks at the audience / progress
LATE_RECHECK = 600
GIVE_UP_AFTER = timedelta(hours=24)
# Tight: what is left of LINE's limit for the month is under this many times the tag. LINE
# then cancels the narrowcast (errorCode 5) rather than reach only some of the tag.
TIGHT_FACTOR = 2
TIGHT_LIMIT = {"upToRemainingQuota": True, "forbidPartialDelivery": True}
ERROR_CODES = {
    1: "LINE の内部エラー",
    2: "送信できる相手がいませんでした",
    3: "受け付け済みのリクエストの再送と判定されました",
    4: "50 人未満のオーディエンスが条件に含まれています",
    5: "今月の残り通数が足りず、一部の人にだけ届くのを避けるため配信が取り消されました",
}
AUDIENCE_FAILED = {
    "AUDIENCE_GROUP_AUDIENCE_INSUFFICIENT": "オーディエンスの人数が足りません",
    "INTERNAL_ERROR": "LINE の内部エラー",
}
COUNTS = ("targetCount", "successCount", "failureCount", "errorCode", "failedDescription")
COUNTS += ("acceptedTime", "completedTime")
PROGRESS = "/v2/bot/message/progress/narrowcast"
Phase = ChannelPost.Phase


def narrowcast_wanted(recipients: int) -> bool:
    """Whether a tag of this many followers goes by narrowcast (the setting 0: never). LINE
    fails an audience under LINE_MINIMUM, only later and with errorCode 4
    (messaging-api.yml `NarrowcastProgressResponse`), so smaller tags never go this way."""
    minimum = settings.LINE_NARROWCAST_MIN_RECIPIENTS
    return bool(minimum) and recipients >= max(minimum, LINE_MINIMUM)


def narrowcast_post(ctx: Context) -> ChannelPost | None:
    """This approval's narrowcast, once it started (a retry goes on with it)."""
    return ChannelPost.objects.filter(
        task=ctx.task, approval_seq=ctx.task.approval_seq, channel="line"
    ).first()


def narrowcast_publish(ctx: Context, *, users: list[str], key: str) -> Done | Wait:
    post = narrowcast_post(ctx) or _start(ctx, users, key)
    if post.phase == Phase.DONE:
        return _done(post)
    transport = line_transport(ctx.tenant.line_channel_token)
    if post.post_id:
        return _progress(ctx, transport, post)
    if post.phase == Phase.PUBLISHING:  # the answer was lost: the same key again
        return _send(ctx, transport, post)
    return _audience_step(ctx, transport, post)


def _start(ctx: Context, users: list[str], key: str) -> ChannelPost:
    fields = {"task": ctx.task, "approval_seq": ctx.task.approval_seq}
    try:
        with transaction.atomic():
            return ChannelPost.objects.create(
                tenant=ctx.tenant,
                channel="line",
                send_key=key,
                processing_since=ctx.now,
                details={"content": ctx.content, "users": users, "uploaded": 0},
                **fields,
            )
    except IntegrityError:
        return ChannelPost.objects.get(**fields)


# -- the audience ----------------------------------------------------------------------------


def _audience_step(ctx: Context, transport: LineTransport, post: ChannelPost) -> Done | Wait:
    details = post.details
    if details.get("users_dropped"):  # the retention policy let the list go
        raise PublishFailed(
            "ナローキャストの宛先リストは保存期間を過ぎて削除されています。もう一度承認してください。"
        )
    users, uploaded, audience_id = details["users"], details["uploaded"], details.get("audience_id")
    if audience_id is None:
        batch = users[:AUDIENCE_IDS_MAX]
        description = f"automedia {ctx.tenant.slug} {ctx.task.issue_key} #{ctx.task.approval_seq}"[:120]
        result = _recorded(
            ctx,
            "/v2/bot/audienceGroup/upload",
            {"kind": "audience", "ids": len(batch)},
            lambda: transport.audience_create(description=description, user_ids=batch),
        )
        audience_id = int(result.body["audienceGroupId"])
        save(post, details={**details, "audience_id": audience_id, "uploaded": len(batch)})
        return _again(ctx, post, "LINE のオーディエンスを作成中")
    data = _recorded(
        ctx,
        "/v2/bot/audienceGroup",
        {"kind": "audience", "audience_id": audience_id},
        lambda: transport.audience(audience_id),
    ).body
    group, jobs = data.get("audienceGroup") or {}, data.get("jobs") or []
    status = str(group.get("status") or "")
    failed = [str(j.get("failedType") or "") for j in jobs if j.get("jobStatus") == "FAILED"]
    if status in ("FAILED", "EXPIRED", "INACTIVE") or failed:
        why = AUDIENCE_FAILED.get(str(group.get("failedType") or (failed or [""])[0]), status or "FAILED")
        raise PublishFailed(
            f"LINE のオーディエンス（ID {audience_id}）を使えません: {why}。何も送信していません。"
        )
    if status != "READY" or any(j.get("jobStatus") != "FINISHED" for j in jobs):
        if ctx.now - (post.processing_since or ctx.now) >= GIVE_UP_AFTER:
            raise PublishFailed(
                f"LINE のオーディエンス（ID {audience_id}）が {GIVE_UP_AFTER.days * 24} 時間経っても"
                f"準備できません（{status}）。何も送信していません。"
            )
        save(post, checks=post.checks + 1)
        return _again(ctx, post, f"LINE のオーディエンスの準備待ち（{status or '不明'}）")
    if uploaded < len(users):
        batch = users[uploaded : uploaded + AUDIENCE_IDS_MAX]
        _recorded(
            ctx,
            "/v2/bot/audienceGroup/upload",
            {"kind": "audience_add", "ids": len(batch)},
            lambda: transport.audience_add(audience_id=audience_id, user_ids=batch),
        )
        save(post, details={**details, "uploaded": uploaded + len(batch)}, checks=0)
        return _again(ctx, post, "LINE のオーディエンスに追加中")
    return _send(ctx, transport, post)


# -- the narrowcast -----------------------------------------------------------------------------


def _send(ctx: Context, transport: LineTransport, post: ChannelPost) -> Done | Wait:
    details = post.details
    if post.phase != Phase.PUBLISHING:
        details = {**details, "limit": _limit(ctx, len(details["users"]))}
        save(post, phase=Phase.PUBLISHING, details=details, checks=0)  # from here, only this key
    ctx.check_claim()
    recipient = {"type": "audience", "audienceGroupId": details["audience_id"]}
    summary = {
        "kind": "narrowcast",
        "recipients": len(details["users"]),
        "audience_id": details["audience_id"],
    }
    if details.get("limit"):
        summary["limit"] = details["limit"]
    call = lambda: transport.narrowcast(  # noqa: E731
        messages=ctx.content, recipient=recipient, limit=details.get("limit"), retry_key=post.send_key
    )
    result = _recorded(ctx, "/v2/bot/message/narrowcast", summary, call, key=post.send_key)
    save(post, post_id=result.request_id[:128], phase=Phase.PROCESSING, checks=0, processing_since=ctx.now)
    return _again(ctx, post, "LINE のナローキャストを受け付けました。配信の完了待ち")


def _limit(ctx: Context, recipients: int) -> dict | None:
    """`limit` when LINE's limit for the month is tight: all or nothing."""
    plan = [("narrowcast", [""] * recipients)]
    forecast = quota_forecast(tenant=ctx.tenant, plan=plan, due_at=ctx.now, now=ctx.now, task=ctx.task)
    if forecast.line_limit is None:
        return None
    left = forecast.line_limit - forecast.used
    return dict(TIGHT_LIMIT) if left < TIGHT_FACTOR * recipients else None


def _progress(ctx: Context, transport: LineTransport, post: ChannelPost) -> Done | Wait:
    endpoint, summary = PROGRESS, {"kind": "progress", "request_id": post.post_id}
    try:
        result = transport.narrowcast_progress(post.post_id)
    except TransportError as exc:
        if exc.status != 404:
            _attempt(ctx, endpoint, summary, error=exc).save()
            raise
        # LINE does not know the request yet (undocumented): looked at again, as `waiting`.
        unknown = TransportError(exc.message, permanent=False, status=404, request_id=exc.request_id)
        _attempt(ctx, endpoint, summary, error=unknown).save()
        result = SendResult(404, exc.request_id, body={"phase": "waiting"})
    data = result.body
    phase = str(data.get("phase") or "")
    counts = {k: data[k] for k in COUNTS if k in data}
    save(post, platform_status=phase[:64], checks=post.checks + 1)
    if phase == "failed":
        reason = _failure(post, counts)
        _attempt(ctx, endpoint, summary | counts, result=result, failed=reason).save()
        _note_on_send(post, counts, reason)
        _audience_drop(ctx, transport, post)
        raise PublishFailed(reason)
    if result.status != 404:
        _attempt(ctx, endpoint, summary | counts, result=result).save()
    if phase == "succeeded":
        return _complete(ctx, transport, post, counts)
    if ctx.now - (post.processing_since or ctx.now) >= GIVE_UP_AFTER:
        raise PublishFailed(
            f"LINE のナローキャスト（リクエストID {post.post_id}）が {GIVE_UP_AFTER.days * 24} 時間経っても"
            f"終わりません（{phase}）。LINE Official Account Manager で配信結果を確認してください。"
        )
    return _again(ctx, post, f"LINE のナローキャストの配信待ち（{phase or '不明'}）")


def _failure(post: ChannelPost, counts: dict) -> str:
    code = counts.get("errorCode")
    why = ERROR_CODES.get(code, counts.get("failedDescription") or "理由不明")
    return (
        f"LINE のナローキャストが失敗しました（errorCode {code}: {why}）。"
        f"成功 {counts.get('successCount', 0):,} 人 / 失敗 {counts.get('failureCount', 0):,} 人 / "
        f"対象 {counts.get('targetCount', 0):,} 人、リクエストID {post.post_id}。"
    )


def _complete(ctx: Context, transport: LineTransport, post: ChannelPost, counts: dict) -> Done:
    _note_on_send(post, counts, "")
    save(post, phase=Phase.DONE, published_at=ctx.now, details={**post.details, "progress": counts})
    _audience_drop(ctx, transport, post)
    return _done(post)


def _done(post: ChannelPost) -> Done:
    counts = post.details.get("progress") or {}
    size = ChannelPost.audience_size(post.details)
    sent = counts.get("successCount", size)
    narrowcast = {"audience": size, **counts}
    return Done({"recipients": sent, "request_ids": [post.post_id], "narrowcast": narrowcast})


def _note_on_send(post: ChannelPost, counts: dict, reason: str) -> None:
    """The narrowcast's own attempt row carries how it ended."""
    sent = DeliveryAttempt.objects.filter(
        task_id=post.task_id, approval_seq=post.approval_seq, endpoint="/v2/bot/message/narrowcast"
    ).exclude(outcome=DeliveryAttempt.Outcome.RETRY)
    for attempt in sent:
        attempt.request_summary = {**attempt.request_summary, "progress": counts}
        changes = {"request_summary": attempt.request_summary}
        if reason:
            changes |= {"outcome": DeliveryAttempt.Outcome.FAILED, "error": reason}
        DeliveryAttempt.objects.filter(pk=attempt.pk).update(**changes)


def _audience_drop(ctx: Context, transport: LineTransport, post: ChannelPost) -> None:
    """The audience has served: deleted, so a channel's audiences do not pile up. Best effort."""
    audience_id = post.details.get("audience_id")
    try:
        _recorded(
            ctx,
            "/v2/bot/audienceGroup",
            {"kind": "audience_delete", "audience_id": audience_id},
            lambda: transport.audience_delete(audience_id),
        )
    except TransportError as exc:
        # The list stays until the retention policy drops it (deliveries/retention.py).
        logger.warning("deleting LINE audience %s of %s failed: %s", audience_id, post.task_id, exc.message)
        return
    save(post, details=ChannelPost.users_dropped(post.details))


# -- pacing and records -----------------------------------------------------------------------


def _again(ctx: Context, post: ChannelPost, reason: str) -> Wait:
    delay = RECHECKS[post.checks] if post.checks < len(RECHECKS) else LATE_RECHECK
    return Wait(ctx.now + timedelta(seconds=delay), reason)


def _recorded(ctx: Context, endpoint: str, summary: dict, call, *, key: str = "") -> SendResult:
    try:
        result = call()
    except TransportError as exc:
        if exc.status == 403:  # the account may not use audiences or narrowcast (not the token)
            exc = TransportError(
                f"{exc.message}（オーディエンスとナローキャストは日本・タイ・台湾のアカウントだけが使えます。LINE_NARROWCAST_MIN_RECIPIENTS=0 で無効にできます）",
                permanent=True,
                status=403,
                request_id=exc.request_id,
            )
        _attempt(ctx, endpoint, summary, key=key, error=exc).save()
        raise exc from None
    _attempt(ctx, endpoint, summary, key=key, result=result).save()
    return result


def _attempt(
    ctx: Context,
    endpoint: str,
    summary: dict,
    *,
    key: str = "",
    result: SendResult | None = None,
    error: TransportError | None = None,
    failed: str = "",
) -> DeliveryAttempt:
    if error is not None:
        outcome = DeliveryAttempt.Outcome.FAILED if error.permanent else DeliveryAttempt.Outcome.RETRY
    elif failed:
        outcome = DeliveryAttempt.Outcome.FAILED
    else:
        outcome = (
            DeliveryAttempt.Outcome.DUPLICATE if result and result.duplicate else DeliveryAttempt.Outcome.SENT
        )
    return DeliveryAttempt(
        tenant=ctx.tenant,
        task=ctx.task,
        approval_seq=ctx.task.approval_seq,
        channel="line",
        endpoint=endpoint,
        retry_key=key,
        request_summary=summary,
        outcome=outcome,
        status_code=result.status if result else (error.status if error else None),
        request_id=(result.request_id if result else (error.request_id if error else ""))[:100],
        error=error.message if error else failed,
        duration_ms=result.duration_ms if result else 0,
    )


def narrowcast_line(progress: dict) -> str:
    """`ナローキャスト: 成功 1,198 人 / 失敗 2 人 / 対象 1,200 人（オーディエンス 1,200 人）`"""
    counts = " / ".join(
        f"{label} {progress[key]:,} 人"
        for key, label in (("successCount", "成功"), ("failureCount", "失敗"), ("targetCount", "対象"))
        if isinstance(progress.get(key), int)
    )
    return f"ナローキャスト: {counts or '件数不明'}（オーディエンス {progress.get('audience', 0):,} 人）"

"""Deliver one approval through HubSpot exactly once: a CRM note or a single-send email.

The audience is the contacts whose tag property matches the task's 対象タグ. Note mode: one
note, found again by a marker after an unclear create, then associated in batches. Email
mode: one single-send per contact with a `sendId` derived from the task and contact, so a
retry resends safely. When the `X-HubSpot-RateLimit-*` headers run low the run stops and the
row is due again after the interval: no sleep in a worker.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.utils import timezone

from backlog_bridge.audience import Audience, AudienceError, parse_audience
from core.timeutil import iso_jst
from deliveries.channels.hubspot.transport import (
    ACCOUNT_DETAILS,
    ASSOCIATE_BATCH,
    CONTACTS,
    NOTE_CONTACT_ASSOCIATE,
    NOTES,
    NOTES_SEARCH,
    SINGLE_SEND,
    HubSpotTransport,
)
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.platform_transport import PlatformError
from deliveries.channels.posts import PostParts, post_outcome, post_outcome_lines
from deliveries.channels.publisher_base import (
    SEND_KEY_NAMESPACE,
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
from deliveries.models import DeliveryAttempt

PACE_FLOOR = 5  # leave a few calls of the window to the tenant's other integrations
PREVIEW_PAGES = 50  # a preview counts up to 5,000 contacts; the delivery itself reads them all
PREVIEW_TIMEOUT = 5.0  # seconds per page: a preview must not hang on a slow HubSpot
ACCEPTED = {"SENT", "QUEUED", "IDEMPOTENT_IGNORE", ""}  # "" = accepted, result not known yet
RETRY_RESULTS = {"THROTTLED"}
Phase = ChannelPost.Phase


# -- what the rest of deliveries asks of this channel (deliveries/channels/publishing.py) --


_PARTS = PostParts(ChannelAccount.Channel.HUBSPOT)
render, messages, send_problems = _PARTS.render, _PARTS.messages, _PARTS.send_problems
outcome, outcome_lines = post_outcome, post_outcome_lines


def publish(ctx: Context) -> Done | Wait:
    account = account_for(ctx.tenant, ChannelAccount.Channel.HUBSPOT)
    kind = ctx.content["type"]
    if problem := mode_problem(account, kind):
        raise PublishFailed(problem)
    post = post_for(ctx, account)
    if post.phase == Phase.DONE:
        return Done(post.details.get("summary") or {})
    hs = HubSpotTransport(token=account.access_token)
    try:
        contacts = _audience(ctx, hs, account)
        return _note(ctx, hs, post, contacts) if kind == "note" else _emails(ctx, hs, account, post, contacts)
    finally:
        hs.close()


def account_problems(account: ChannelAccount, content: dict | None, now: datetime) -> list[str]:
    """What stops a post at this account, known without calling HubSpot (commands, preview)."""
    problem = mode_problem(account, content["type"]) if content else ""
    return [problem] if problem else []


def mode_problem(account: ChannelAccount, kind: str) -> str:
    """The template's type must be the account's mode (a note template cannot send email)."""
    if kind == account.hubspot_mode:
        return ""
    return (
        f"テンプレの type「{kind}」と HubSpot アカウントのモード「{account.hubspot_mode}」が一致しません"
        f"（manage.py add_channel {account.tenant.slug} hubspot --mode {kind} で切り替えるか、テンプレを直してください）。"
    )


# -- audience ------------------------------------------------------------------------


def _audience(ctx: Context, hs: HubSpotTransport, account: ChannelAccount) -> list[dict]:
    """The matched contacts, sorted by id: [{"id", "email"}]."""
    try:
        audience = parse_audience(ctx.audience)
    except AudienceError as exc:
        raise PublishFailed(f"対象タグを解釈できません: {exc}") from exc
    matched, after = [], None
    while True:
        _pace(ctx, hs)
        page, after = recorded(
            ctx,
            hs,
            CONTACTS,
            lambda after=after: hs.contacts_page(
                properties=["email", account.hubspot_tag_property], after=after
            ),
        )
        matched += [_contact(c) for c in page if _matches(c, audience, account.hubspot_tag_property)]
        if not after:
            break
    if not matched:
        raise PublishFailed(f"対象者がいません（HubSpot のコンタクト、対象タグ: {ctx.audience}）")
    return sorted(matched, key=lambda c: int(c["id"]) if c["id"].isdigit() else c["id"])


@dataclass
class AudienceCount:
    matched: int
    without_email: int
    complete: bool  # False: counting stopped after PREVIEW_PAGES pages


def audience_count(*, account: ChannelAccount, expression: str) -> AudienceCount:
    """The contacts a delivery would reach, counted for a preview: read-only, unrecorded, bounded.

    Raises AudienceError (the expression) or PlatformError (HubSpot)."""
    audience, prop = parse_audience(expression), account.hubspot_tag_property
    timeout = min(settings.PLATFORM_TIMEOUT_SECONDS, PREVIEW_TIMEOUT)
    hs = HubSpotTransport(token=account.access_token, timeout=timeout)
    matched = without_email = 0
    after = None
    try:
        for _ in range(PREVIEW_PAGES):
            page, after = hs.contacts_page(properties=["email", prop], after=after)
            found = [_contact(c) for c in page if _matches(c, audience, prop)]
            matched += len(found)
            without_email += sum(1 for c in found if not c["email"])
            if not after:
                return AudienceCount(matched, without_email, complete=True)
    finally:
        hs.close()
    return AudienceCount(matched, without_email, complete=False)


def _matches(contact: dict, audience: Audience, prop: str) -> bool:
    raw = (contact.get("properties") or {}).get(prop) or ""
    return audience.matches({t.strip() for t in str(raw).split(";") if t.strip()})


def _contact(contact: dict) -> dict:
    return {"id": str(contact["id"]), "email": (contact.get("properties") or {}).get("email") or ""}


def _pace(ctx: Context, hs: HubSpotTransport) -> None:
    rate, now = hs.rate, timezone.now()  # not ctx.now: a long run has moved on since it started
    if rate.daily_remaining is not None and rate.daily_remaining <= PACE_FLOOR:
        raise Waiting(Wait(_daily_reset(ctx, hs, now), "HubSpot の 1 日の API 上限に近いため翌日まで待機"))
    if rate.remaining is not None and rate.remaining <= PACE_FLOOR:
        due = now + timedelta(milliseconds=rate.interval_ms)
        raise Waiting(Wait(due, f"HubSpot のレート制限に合わせて待機（残り {rate.remaining} 回）"))


def _daily_reset(ctx: Context, hs: HubSpotTransport, now: datetime) -> datetime:
    """Just after the next midnight in the account's time zone: "The daily limits reset at
    midnight based on the time zone setting of the HubSpot account"
    (https://developers.hubspot.com/apisbytier), a setting the account details give
    (`timeZone`, `utcOffsetMilliseconds`:
    https://developers.hubspot.com/docs/api-reference/legacy/account/account-information/get-account-details).
    An answer without either is looked at again in an hour."""
    zone = _account_zone(recorded(ctx, hs, ACCOUNT_DETAILS, hs.account_details))
    if zone is None:
        return now + timedelta(hours=1)
    return datetime.combine(now.astimezone(zone).date() + timedelta(days=1), time(0, 5), zone)


def _account_zone(details: dict) -> tzinfo | None:
    try:
        return ZoneInfo(str(details.get("timeZone") or ""))
    except (ValueError, ZoneInfoNotFoundError):
        pass
    offset = details.get("utcOffsetMilliseconds")
    if not isinstance(offset, int) or abs(offset) >= 86_400_000:
        return None
    return dt_timezone(timedelta(milliseconds=offset))


# -- note ------------------------------------------------------------------------------


def _note(ctx: Context, hs: HubSpotTransport, post: ChannelPost, contacts: list[dict]) -> Done:
    if not post.note_id:
        _create_note(ctx, hs, post)
    associated = list(post.details.get("associated") or [])
    todo = [c["id"] for c in contacts if c["id"] not in set(associated)]
    for start in range(0, len(todo), ASSOCIATE_BATCH):
        batch = todo[start : start + ASSOCIATE_BATCH]
        _pace(ctx, hs)
        ctx.check_claim()
        recorded(
            ctx,
            hs,
            NOTE_CONTACT_ASSOCIATE,
            lambda batch=batch: hs.note_associate(post.note_id, batch),
            key=post.note_id,
            summary={"contacts": len(batch)},
        )
        associated += batch
        save(post, details={**post.details, "associated": associated})
    lines = [
        "HubSpot にノートを作成しました。",
        f"ノートID: {post.note_id}",
        f"関連付けたコンタクト: {len(associated)} 件",
    ]
    summary = {"platform": "HubSpot", "post_id": post.note_id, "permalink": "", "lines": lines}
    save(
        post,
        phase=Phase.DONE,
        published_at=ctx.now,
        post_id=post.note_id,
        details={**post.details, "summary": summary},
    )
    return Done(summary)


def _create_note(ctx: Context, hs: HubSpotTransport, post: ChannelPost) -> None:
    if post.phase == Phase.SENDING:  # an earlier create may have reached HubSpot
        _pace(ctx, hs)
        found = recorded(ctx, hs, NOTES_SEARCH, lambda: hs.note_find(post.send_key), key=post.send_key)
        if found:
            save(post, note_id=found)
            return
    _pace(ctx, hs)
    ctx.check_claim()
    save(post, phase=Phase.SENDING)
    body = f"{ctx.content['body']}\n<p>automedia: {ctx.task.issue_key} ({post.send_key})</p>"
    note_id = recorded(
        ctx, hs, NOTES, lambda: hs.note_create(body=body, timestamp=iso_jst(ctx.now)), key=post.send_key
    )
    save(post, note_id=note_id)


# -- email -----------------------------------------------------------------------------


def _emails(
    ctx: Context, hs: HubSpotTransport, account: ChannelAccount, post: ChannelPost, contacts: list[dict]
) -> Done:
    answered = _answered(ctx)
    save(post, phase=Phase.SENDING)
    for contact in contacts:
        send_id = send_id_for(ctx, contact["id"])
        if send_id in answered or not contact["email"]:
            continue
        _pace(ctx, hs)
        ctx.check_claim()
        _send_one(ctx, hs, account, contact, send_id)
    return _email_summary(ctx, post, contacts)


def send_id_for(ctx: Context, contact_id: str) -> str:
    key = f"{ctx.tenant.slug}:{ctx.task.issue_key}:{ctx.task.approval_seq}:{contact_id}"
    return str(uuid.uuid5(SEND_KEY_NAMESPACE, key))


def _answered(ctx: Context) -> set[str]:
    """sendIds HubSpot already answered for this approval (sent, repeat, or refused for the contact)."""
    return set(_answered_sends(ctx).values_list("retry_key", flat=True))


def _answered_sends(ctx: Context):
    """This approval's single-send attempts that HubSpot answered with a 2xx."""
    return DeliveryAttempt.objects.filter(
        task=ctx.task,
        approval_seq=ctx.task.approval_seq,
        channel="hubspot",
        endpoint=SINGLE_SEND,
        status_code__gte=200,
        status_code__lt=300,
    )


def _send_one(
    ctx: Context, hs: HubSpotTransport, account: ChannelAccount, contact: dict, send_id: str
) -> None:
    sender = {
        k: v
        for k, v in (
            ("from", account.hubspot_email_from),
            ("replyTo", [account.hubspot_reply_to] if account.hubspot_reply_to else None),
        )
        if v
    }
    try:
        answer = hs.single_send(
            email_id=ctx.content["email_id"],
            to=contact["email"],
            send_id=send_id,
            custom_properties=ctx.content.get("custom_properties") or {},
            sender=sender,
        )
    except PlatformError as exc:
        record(ctx, hs, SINGLE_SEND, key=send_id, error=exc, summary={"contact": contact["id"]})
        raise
    result = str(answer.get("sendResult") or "")
    if result in RETRY_RESULTS:
        raise PlatformError(
            f"HubSpot がメール送信を保留しました（{result}）", permanent=False, status=hs.last_status
        )
    outcome = (
        DeliveryAttempt.Outcome.DUPLICATE if result == "IDEMPOTENT_IGNORE" else DeliveryAttempt.Outcome.SENT
    )
    if result not in ACCEPTED:
        outcome = DeliveryAttempt.Outcome.FAILED
    summary = {"contact": contact["id"], "sendResult": result, "statusId": answer.get("statusId", "")}
    record(ctx, hs, SINGLE_SEND, key=send_id, summary=summary, outcome=outcome)


def _email_summary(ctx: Context, post: ChannelPost, contacts: list[dict]) -> Done:
    rows = _answered_sends(ctx)
    by_send_id: dict[str, str] = {}
    for row in rows.order_by("created_at"):
        result = row.request_summary.get("sendResult", "")
        if by_send_id.get(row.retry_key) not in ACCEPTED:  # an accepted answer wins over a refusal
            by_send_id[row.retry_key] = result
    sent = sum(1 for result in by_send_id.values() if result in ACCEPTED)
    refused: dict[str, int] = {}
    for result in by_send_id.values():
        if result not in ACCEPTED:
            refused[result] = refused.get(result, 0) + 1
    no_email = sum(1 for c in contacts if not c["email"])
    lines = [
        "HubSpot でメールを送信しました。",
        f"メールID: {ctx.content['email_id']}",
        f"送信: {sent} 件（sendId により 1 通ずつ）",
    ]
    if refused:
        lines.append(
            "送信されなかったコンタクト: " + "、".join(f"{k} {v} 件" for k, v in sorted(refused.items()))
        )
    if no_email:
        lines.append(f"メールアドレスのないコンタクト: {no_email} 件")
    summary = {
        "platform": "HubSpot",
        "post_id": str(ctx.content["email_id"]),
        "permalink": "",
        "sent": sent,
        "lines": lines,
    }
    save(post, phase=Phase.DONE, published_at=ctx.now, details={**post.details, "summary": summary})
    return Done(summary)

"""The LINE publisher: the task's messages to its audience, each chunk exactly once.

The audience is a list of group ids (one push each) or a tag expression matched against
the tenant's contacts (multicasts of at most 500 user ids; from LINE_NARROWCAST_MIN_RECIPIENTS
followers, one narrowcast: deliveries/channels/line/narrowcast.py). Every chunk carries a
deterministic `X-Line-Retry-Key`, so a resend after a crash is answered 409 by LINE and
never posted twice (https://developers.line.biz/en/docs/messaging-api/retrying-api-request/);
a retry also skips the chunks already recorded as sent.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from backlog_bridge.audience import AudienceError, parse_audience
from backlog_bridge.body.task import ParsedTask, TemplateRef
from core.models import Tenant
from core.transport import SendResult, TransportError
from deliveries.channels.line.narrowcast import (
    narrowcast_line,
    narrowcast_post,
    narrowcast_publish,
    narrowcast_wanted,
)
from deliveries.channels.line.templates import render_messages
from deliveries.channels.placeholders import RenderError
from deliveries.channels.publisher_base import Context, Done, PublishFailed, Wait
from deliveries.channels.template_store import template_resolve
from deliveries.models import ContentTask, DeliveryAttempt
from line.services import contacts_matching
from line.transport import (
    MULTICAST_MAX,
    aggregation_unit,
    line_transport,
    sent_messages_of,
)

RETRY_KEY_NAMESPACE = uuid.UUID("6f1c9a52-3b7e-4d2a-9c41-7a0e5d8b2f10")

Plan = list[tuple[str, object]]


def retry_key(*, tenant: Tenant, issue_key: str, approval_seq: int, chunk: int) -> str:
    """The same (tenant, issue, approval, chunk) always gives the same UUID, so a
    resend after a crash is recognised by LINE (409) and never posted twice."""
    return str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{tenant.slug}:{issue_key}:{approval_seq}:{chunk}"))


def narrowcast_key(*, tenant: Tenant, issue_key: str, approval_seq: int) -> str:
    """The one X-Line-Retry-Key of an approval's narrowcast (never a multicast chunk's)."""
    return str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{tenant.slug}:{issue_key}:{approval_seq}:narrowcast"))


# -- what the rest of deliveries asks of this channel (deliveries/channels/publishing.py) --


def render(*, tenant: Tenant, parsed: ParsedTask, override: dict) -> list[dict]:
    """The LINE messages exactly as they will be sent; PublishFailed says why they cannot be."""
    if not tenant.line_channel_token:
        raise PublishFailed("LINE チャネルアクセストークンが設定されていません", auth=True)
    try:
        ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
        if ref is None:
            raise PublishFailed("テンプレが指定されていません")
        template = template_resolve(tenant=tenant, ref=ref)
        return render_messages(
            messages=template.messages, variables=parsed.variables, attachments=parsed.attachments
        )
    except (RenderError, ValueError) as exc:
        raise PublishFailed(f"メッセージを作成できません: {exc}") from exc


def messages(content: list[dict]) -> list[dict]:
    return content


def send_problems(*, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime) -> list[str]:
    try:
        render(tenant=tenant, parsed=parsed, override=override)
    except PublishFailed as exc:
        return [exc.reason]
    return []


def outcome(summary: dict) -> dict:
    """Recipients and request ids, as the write-back comment names them."""
    return summary


def outcome_lines(outcome: dict) -> list[str]:
    lines = [
        f"LINE に配信しました。配信先: {outcome['recipients']} 件",
        f"LINE リクエストID: {', '.join(outcome['request_ids'])}",
    ]
    return lines + ([narrowcast_line(outcome["narrowcast"])] if outcome.get("narrowcast") else [])


# -- publishing --------------------------------------------------------------------------


def audience_plan(*, tenant: Tenant, expression: str) -> Plan:
    """[("push", groupId) …], [("multicast", [userId ≤ 500]) …] or, for a large tag,
    [("narrowcast", [userId …])]."""
    try:
        audience = parse_audience(expression)
    except AudienceError as exc:
        raise PublishFailed(f"対象タグを解釈できません: {exc}") from exc
    if audience.is_group_target:
        return [("push", group) for group in audience.groups]
    users = contacts_matching(tenant=tenant, audience=audience)
    if not users:
        raise PublishFailed(f"対象者がいません（対象タグ: {expression}）")
    if narrowcast_wanted(len(users)):
        return [("narrowcast", users)]
    return multicast_plan(users)


def multicast_plan(users: list[str]) -> Plan:
    return [("multicast", users[i : i + MULTICAST_MAX]) for i in range(0, len(users), MULTICAST_MAX)]


def publish(ctx: Context) -> Done | Wait:
    """A narrowcast started for this approval goes on; otherwise the audience's plan."""
    task = ctx.task
    if not ctx.nothing_sent and (post := narrowcast_post(ctx)) is not None:
        return narrowcast_publish(ctx, users=post.details["users"], key=post.send_key)
    plan = audience_plan(tenant=ctx.tenant, expression=ctx.audience)
    if plan[0][0] == "narrowcast":
        if ctx.nothing_sent or not _chunks_done(task):
            key = narrowcast_key(tenant=ctx.tenant, issue_key=task.issue_key, approval_seq=task.approval_seq)
            return narrowcast_publish(ctx, users=plan[0][1], key=key)
        plan = multicast_plan(plan[0][1])  # begun by multicast (a changed setting): ends so
    return _chunks_send(ctx, plan)


def _chunks_send(ctx: Context, plan: Plan) -> Done:
    """Send every chunk not yet accepted; a failed chunk is recorded and its error re-raised.

    The attempts of accepted chunks are handed back unsaved (`Done.records`): the run saves
    them with its outcome, in one commit. If it stops before that, the next run resends
    those chunks with the same retry key, LINE answers 409, and the attempt is recorded as
    a duplicate: nothing is posted twice. An exception here saves them at once."""
    task, tenant = ctx.task, ctx.tenant
    done = {} if ctx.nothing_sent else _chunks_done(task)
    transport = line_transport(tenant.line_channel_token)
    unit = aggregation_unit(task.issue_key)
    accepted: list[DeliveryAttempt] = []
    try:
        for chunk, (kind, to) in enumerate(plan):
            if chunk in done:
                continue
            ctx.check_claim()
            key = retry_key(
                tenant=tenant, issue_key=task.issue_key, approval_seq=task.approval_seq, chunk=chunk
            )
            try:
                if kind == "push":
                    result = transport.push(to=to, messages=ctx.content, retry_key=key, unit=unit)
                else:
                    result = transport.multicast(to=to, messages=ctx.content, retry_key=key, unit=unit)
            except TransportError as exc:
                _attempt(ctx, chunk, kind, to, key, error=exc).save()
                raise
            done[chunk] = _attempt(ctx, chunk, kind, to, key, result=result)
            accepted.append(done[chunk])
    except BaseException:
        DeliveryAttempt.objects.bulk_create(accepted)
        raise
    recipients = sum(1 if kind == "push" else len(to) for kind, to in plan)
    summary = {"recipients": recipients, "request_ids": [done[i].request_id for i in sorted(done)]}
    return Done(summary=summary, records=accepted)


def _chunks_done(task: ContentTask) -> dict[int, DeliveryAttempt]:
    """Chunks of this approval that LINE already accepted (a retry skips them)."""
    sent = DeliveryAttempt.objects.filter(
        task=task,
        approval_seq=task.approval_seq,
        correction__isnull=True,
        outcome__in=DeliveryAttempt.ACCEPTED,
    )
    return {a.chunk: a for a in sent}


def _attempt(
    ctx: Context,
    chunk: int,
    kind: str,
    to,
    key: str,
    *,
    result: SendResult | None = None,
    error: TransportError | None = None,
) -> DeliveryAttempt:
    recipients = [to] if isinstance(to, str) else list(to)
    return DeliveryAttempt(
        tenant=ctx.tenant,
        task=ctx.task,
        approval_seq=ctx.task.approval_seq,
        chunk=chunk,
        channel="line",
        endpoint=f"/v2/bot/message/{kind}",
        retry_key=key,
        request_summary={
            "kind": kind,
            "recipients": len(recipients),
            "first": recipients[0],
            "to": recipients,  # exactly who it went to: a correction goes to the same
            "lateness_ms": _lateness_ms(ctx),
        },
        **attempt_answer(result, error),
    )


def attempt_answer(result, error) -> dict:
    """The columns of a LINE DeliveryAttempt that LINE's answer (or the error) decides."""
    if result is not None:
        outcome = DeliveryAttempt.Outcome.DUPLICATE if result.duplicate else DeliveryAttempt.Outcome.SENT
    else:
        outcome = DeliveryAttempt.Outcome.FAILED if error.permanent else DeliveryAttempt.Outcome.RETRY
    return {
        "outcome": outcome,
        "sent_messages": sent_messages_of(result.body) if result else [],
        "status_code": result.status if result else error.status,
        "request_id": result.request_id if result else error.request_id,
        "error": error.message if error else "",
        "duration_ms": result.duration_ms if result else 0,
    }


def _lateness_ms(ctx: Context) -> int:
    return int((ctx.now - ctx.due_at).total_seconds() * 1000) if ctx.due_at is not None else 0

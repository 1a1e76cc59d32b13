"""`deliver`: one claimed schedule → LINE exactly once → one Backlog write-back.

Order of work (seed 000/001): claim → lock per (tenant, issue) →
idempotency (自動配信実行日時) → re-check in Backlog (still approved, unchanged,
quiet hours) → render → audience → send each chunk with a deterministic
X-Line-Retry-Key → record → write back in one PATCH → delete the schedule.
No transaction or row lock is held across an HTTP call; every step tolerates
running twice.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.mail import mail_admins
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from backlog_bridge.client import BacklogClient, BacklogError, shared_client
from backlog_bridge.parser import ParsedTask, TemplateRef
from backlog_bridge.services import IssueState, issue_read, issue_reconcile, issue_state
from core import metrics
from core.models import Tenant
from core.timeutil import fmt_jst, iso_jst
from deliveries import publishers
from deliveries.audience import AudienceError, parse_audience
from deliveries.channel_templates import describe
from deliveries.channels.base import TransportError
from deliveries.channels.line import MULTICAST_MAX, aggregation_unit, line_transport
from deliveries.effects import effect_reports_plan
from deliveries.models import (
    CHANNEL_LABELS,
    FIELD_DELIVERED_AT,
    STATUS_DELIVERED,
    STATUS_ERROR,
    ChannelAccount,
    ChannelPost,
    ContentTask,
    DeliveryAttempt,
    DeliveryLock,
    DeliverySchedule,
)
from deliveries.rendering import RenderError, render_messages, template_resolve
from deliveries.retry import next_delay, writeback_delay
from deliveries.scheduler import lease_length, lease_release, lease_renew
from deliveries.tokens import token_expired_notice
from linepush.models import LineContact

logger = logging.getLogger(__name__)

WRITEBACK_QUEUED = "sent; write-back queued"
RETRY_KEY_NAMESPACE = uuid.UUID("6f1c9a52-3b7e-4d2a-9c41-7a0e5d8b2f10")


class DeliveryFailed(Exception):
    """A permanent failure: the task ends in automediaエラー with this reason."""

    def __init__(self, reason: str, *, auth: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.auth = auth


def retry_key(*, tenant: Tenant, issue_key: str, approval_seq: int, chunk: int) -> str:
    """The same (tenant, issue, approval, chunk) always gives the same UUID, so a
    resend after a crash is recognised by LINE (409) and never posted twice."""
    return str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{tenant.slug}:{issue_key}:{approval_seq}:{chunk}"))


# -- the lock per (tenant, issue) ----------------------------------------------------


def lock_take(*, tenant: Tenant, issue_key: str, owner: str, now: datetime) -> bool:
    """Take the delivery lock; a second taker gets False.

    A lock is live while it has not expired (1 hour) and its owner still holds a
    live claim on a schedule; otherwise the next taker may take it over.
    """
    expires = now + timedelta(seconds=DeliveryLock.TTL_SECONDS)
    if _lock_insert(tenant=tenant, issue_key=issue_key, owner=owner, now=now, expires=expires):
        return True
    live_claim = DeliverySchedule.objects.filter(claimed_by=OuterRef("owner"), lease_until__gt=now)
    stale = Q(expires_at__lte=now) | ~Q(Exists(live_claim)) | Q(owner=owner)
    return (
        DeliveryLock.objects.filter(tenant=tenant, issue_key=issue_key)
        .filter(stale)
        .update(owner=owner, taken_at=now, expires_at=expires)
        == 1
    )


_INSERT_LOCK = (
    "INSERT INTO {table} (tenant_id, issue_key, owner, taken_at, expires_at)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant_id, issue_key) DO NOTHING"
)


def _lock_insert(*, tenant: Tenant, issue_key: str, owner: str, now: datetime, expires: datetime) -> bool:
    """One `INSERT … ON CONFLICT DO NOTHING` (SQLite ≥ 3.35, PostgreSQL): no savepoint
    and no IntegrityError round trip when the lock is held."""
    stamp = DeliveryLock._meta.get_field("taken_at").get_db_prep_save
    params = [tenant.pk, issue_key, owner, stamp(now, connection), stamp(expires, connection)]
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_LOCK.format(table=DeliveryLock._meta.db_table), params)
        return cursor.rowcount == 1


_DELETE_LOCK = "DELETE FROM {table} WHERE tenant_id = %s AND issue_key = %s AND owner = %s"


def lock_release(*, tenant: Tenant, issue_key: str, owner: str) -> None:
    """One DELETE: the ORM's `.delete()` adds a transaction (and a collector) around it."""
    with connection.cursor() as cursor:
        cursor.execute(_DELETE_LOCK.format(table=DeliveryLock._meta.db_table), [tenant.pk, issue_key, owner])


# -- entry point ---------------------------------------------------------------------


@dataclass
class Run:
    """One claimed run of one schedule."""

    schedule: DeliverySchedule
    token: str
    now: datetime
    channel: str = "line"  # set when an Instagram / TikTok / HubSpot publisher takes over
    issue: dict | None = None  # the issue as read for the whole batch (issues_prefetch)
    sends_follow: bool = False  # the batch still has sends to make after this one

    @property
    def task(self) -> ContentTask:
        return self.schedule.task

    @property
    def tenant(self) -> Tenant:
        return self.schedule.tenant

    def release(self, **changes) -> None:
        lease_release(schedule_id=self.schedule.pk, token=self.token, **changes)

    def still_mine(self) -> bool:
        """Before each send: is the claim still ours? A claim with more than half its lease
        left cannot have been taken (nobody claims before lease_until), so only an older
        one is renewed, which also tells whether it was lost."""
        now, lease = timezone.now(), lease_length()
        held = self.schedule.lease_until
        if held is not None and held - now > lease / 2:
            return True
        if not lease_renew(schedule_id=self.schedule.pk, token=self.token, now=now):
            return False
        self.schedule.lease_until = now + lease
        return True


def delivery_run(
    *, schedule_id: int, token: str, issue: dict | None = None, sends_follow: bool = False
) -> str:
    """`issue`: the issue's JSON read moments ago for a whole batch (issues_prefetch);
    without it, the re-check reads the issue itself. `sends_follow`: the batch holds
    other claimed sends after this one, so other deliveries are due (see `_sent`)."""
    schedule = (
        DeliverySchedule.objects.select_related("task", "tenant")
        .filter(pk=schedule_id, claimed_by=token)
        .first()
    )
    if schedule is None:
        return "not claimed"  # deleted, or the lease passed to another scheduler
    run = Run(schedule=schedule, token=token, now=timezone.now(), issue=issue, sends_follow=sends_follow)
    if schedule.stage == DeliverySchedule.Stage.DELIVER and schedule.attempts == 0:
        metrics.fired((run.now - schedule.due_at).total_seconds())
    issue_key = schedule.task.issue_key
    if not lock_take(tenant=run.tenant, issue_key=issue_key, owner=token, now=run.now):
        run.release(due_at=run.now + timedelta(seconds=5))
        return "locked"
    try:
        backlog = shared_client(run.tenant)
        if schedule.stage == DeliverySchedule.Stage.WRITEBACK:
            return _writeback(run, backlog)
        return _deliver(run, backlog)
    finally:
        lock_release(tenant=run.tenant, issue_key=issue_key, owner=token)


def issues_prefetch(*, rows: dict[int, tuple[int, int]]) -> dict[int, dict]:
    """{schedule id: issue JSON} for the rows about to be delivered ({schedule id:
    (tenant id, issue id)}): one Backlog call per tenant for a batch instead of one per
    delivery. A row whose issue is missing from the answer (deleted, or the call
    failed) reads it itself."""
    by_tenant: dict[int, dict[int, int]] = {}
    for pk, (tenant_id, issue_id) in rows.items():
        by_tenant.setdefault(tenant_id, {})[issue_id] = pk
    found: dict[int, dict] = {}
    for tenant in Tenant.objects.filter(pk__in=[t for t, ids in by_tenant.items() if len(ids) > 1]):
        wanted = by_tenant[tenant.pk]
        try:
            issues = shared_client(tenant).issues_by_id(list(wanted))
        except BacklogError as exc:
            logger.warning("batch read of %s issues failed, each reads its own: %s", tenant.slug, exc)
            continue
        found |= {wanted[issue["id"]]: issue for issue in issues if issue.get("id") in wanted}
    return found


# -- delivering ----------------------------------------------------------------------


def _deliver(run: Run, backlog: BacklogClient) -> str:
    try:
        if run.issue is not None:
            state = issue_state(run.issue)
        else:
            state = issue_read(client=backlog, issue_key=run.task.issue_key)
    except BacklogError as exc:
        return _retry_or_fail(run, TransportError(str(exc), permanent=not exc.retryable, status=exc.status))
    # Once a platform publish call may have gone out, only its outcome is read: an edit
    # or quiet hours must not strand a post that is (probably) already public.
    committed = publishers.committed_post(run.task)
    if committed is None or state is None or state.delivered_at:
        verdict = _recheck(run, state, backlog)
        if verdict:
            return verdict
    channel = committed.channel if committed is not None else state.parsed.channel
    if channel in publishers.CHANNELS:
        return _publish(run, state, channel, committed, backlog)
    try:
        plan, messages = _prepare(run, state)
    except DeliveryFailed as exc:
        return _fail(run, exc, backlog)
    return _send(run, plan, messages, backlog)


def _recheck(run: Run, state: IssueState | None, backlog: BacklogClient) -> str:
    """Empty string = go ahead; otherwise what was done instead of sending."""
    task, tenant = run.task, run.tenant
    if state is None or not state.approved or state.delivered_at:
        DeliverySchedule.objects.filter(pk=run.schedule.pk).delete()
        if state is not None and state.delivered_at:
            ContentTask.objects.filter(pk=task.pk).update(delivered_at=state.delivered_at)
            return "already delivered"
        return "no longer approved"
    if state.fingerprint != task.approval_fingerprint or state.parsed.publish_at != task.approved_publish_at:
        run.release()
        issue_reconcile(tenant=tenant, issue_key=task.issue_key, client=backlog)
        return "changed since approval"
    quiet = tenant.quiet_hours_config()
    verdict = quiet.check(run.now)
    if verdict.inside:
        if quiet.mode == "defer":
            run.release(due_at=verdict.window_end)
            return f"deferred to {verdict.window_end.isoformat()}"
        return _fail(run, DeliveryFailed(f"配信時刻が静粛時間帯です。{verdict.message}"), backlog)
    return ""


def _prepare(run: Run, state: IssueState) -> tuple[list[tuple[str, object]], list[dict]]:
    command = run.schedule.reason == DeliverySchedule.Reason.COMMAND
    override = run.task.command_override if command else {}
    messages = delivery_render(tenant=run.tenant, parsed=state.parsed, override=override)
    return audience_plan(
        tenant=run.tenant, expression=override.get("audience") or state.parsed.audience
    ), messages


def delivery_render(*, tenant: Tenant, parsed: ParsedTask, override: dict | None = None) -> list[dict]:
    """The LINE messages exactly as they will be sent (also what a preview shows).

    `override`: `/automedia send template=… audience=…` values, which win over the body.
    """
    override = override or {}
    channel = parsed.channel or ("line" if override else None)
    if channel in publishers.CHANNELS:
        content = post_content(tenant=tenant, channel=channel, parsed=parsed, override=override)
        return [
            {
                "type": f"{channel}:{content['type']}",
                "altText": describe(channel, content),
                "content": content,
            }
        ]
    if channel != "line":
        raise DeliveryFailed(f"チャネル「{channel or 'なし'}」への配信はまだ対応していません")
    if not tenant.line_channel_token:
        raise DeliveryFailed("LINE チャネルアクセストークンが設定されていません", auth=True)
    try:
        ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
        if ref is None:
            raise DeliveryFailed("テンプレが指定されていません")
        template = template_resolve(tenant=tenant, ref=ref)
        return render_messages(
            messages=template.messages, variables=parsed.variables, attachments=parsed.attachments
        )
    except (RenderError, ValueError) as exc:
        raise DeliveryFailed(f"メッセージを作成できません: {exc}") from exc


def audience_plan(*, tenant: Tenant, expression: str) -> list[tuple[str, object]]:
    """[("push", groupId) …] or [("multicast", [userId ≤ 500]) …]."""
    try:
        audience = parse_audience(expression)
    except AudienceError as exc:
        raise DeliveryFailed(f"対象タグを解釈できません: {exc}") from exc
    if audience.is_group_target:
        return [("push", group) for group in audience.groups]
    contacts = LineContact.objects.filter(tenant=tenant, blocked=False).order_by("user_id")
    users = [c.user_id for c in contacts.only("user_id", "tags") if audience.matches(set(c.tags))]
    if not users:
        raise DeliveryFailed(f"対象者がいません（対象タグ: {expression}）")
    return [("multicast", users[i : i + MULTICAST_MAX]) for i in range(0, len(users), MULTICAST_MAX)]


def _send(run: Run, plan: list[tuple[str, object]], messages: list[dict], backlog: BacklogClient) -> str:
    task, tenant = run.task, run.tenant
    done = _chunks_done(task)
    transport = line_transport(tenant.line_channel_token)
    unit = aggregation_unit(task.issue_key)
    for chunk, (kind, to) in enumerate(plan):
        if chunk in done:
            continue
        if not run.still_mine():
            return "claim lost"
        key = retry_key(tenant=tenant, issue_key=task.issue_key, approval_seq=task.approval_seq, chunk=chunk)
        try:
            if kind == "push":
                result = transport.push(to=to, messages=messages, retry_key=key, unit=unit)
            else:
                result = transport.multicast(to=to, messages=messages, retry_key=key, unit=unit)
        except TransportError as exc:
            _record(run, chunk, kind, to, key, error=exc)
            return _retry_or_fail(run, exc, backlog)
        done[chunk] = _record(run, chunk, kind, to, key, result=result)
    return _succeed(run, plan, done, backlog)


def _chunks_done(task: ContentTask) -> dict[int, DeliveryAttempt]:
    """Chunks of this approval that LINE already accepted (a retry skips them)."""
    sent = DeliveryAttempt.objects.filter(
        task=task,
        approval_seq=task.approval_seq,
        outcome__in=[DeliveryAttempt.Outcome.SENT, DeliveryAttempt.Outcome.DUPLICATE],
    )
    return {a.chunk: a for a in sent}


def _record(run: Run, chunk: int, kind: str, to, key: str, *, result=None, error=None) -> DeliveryAttempt:
    recipients = [to] if isinstance(to, str) else list(to)
    if result is not None:
        outcome = DeliveryAttempt.Outcome.DUPLICATE if result.duplicate else DeliveryAttempt.Outcome.SENT
    else:
        outcome = DeliveryAttempt.Outcome.FAILED if error.permanent else DeliveryAttempt.Outcome.RETRY
    return DeliveryAttempt.objects.create(
        tenant=run.tenant,
        task=run.task,
        approval_seq=run.task.approval_seq,
        chunk=chunk,
        channel="line",
        endpoint=f"/v2/bot/message/{kind}",
        retry_key=key,
        request_summary={
            "kind": kind,
            "recipients": len(recipients),
            "first": recipients[0],
            "lateness_ms": _lateness_ms(run),
        },
        status_code=result.status if result else error.status,
        request_id=result.request_id if result else error.request_id,
        outcome=outcome,
        error=error.message if error else "",
        duration_ms=result.duration_ms if result else 0,
    )


def _lateness_ms(run: Run) -> int:
    return int((run.now - run.schedule.due_at).total_seconds() * 1000)


# -- Instagram / TikTok / HubSpot (deliveries/publishers/) ------------------------------


def post_content(*, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict | None = None) -> dict:
    """The channel template filled and validated, before anything is sent (errors name the field)."""
    try:
        publishers.account_for(tenant, channel)
        return publishers.post_render(tenant=tenant, channel=channel, parsed=parsed, override=override)
    except publishers.PublishFailed as exc:
        raise DeliveryFailed(exc.reason) from exc
    except (RenderError, ValueError) as exc:
        raise DeliveryFailed(f"メッセージを作成できません: {exc}") from exc


def _publish(
    run: Run, state: IssueState, channel: str, committed: ChannelPost | None, backlog: BacklogClient
) -> str:
    run.channel = channel
    override = run.task.command_override if run.schedule.reason == DeliverySchedule.Reason.COMMAND else {}
    try:
        # A committed post goes on with what it started with, even if the issue changed since.
        content = committed.details.get("content") if committed is not None else None
        content = content or post_content(
            tenant=run.tenant, channel=channel, parsed=state.parsed, override=override
        )
        ctx = publishers.Context(
            tenant=run.tenant,
            task=run.task,
            content=content,
            audience=override.get("audience") or state.parsed.audience,
            now=run.now,
            still_mine=run.still_mine,
        )
        step = publishers.publish_step(channel=channel, ctx=ctx)
    except DeliveryFailed as exc:
        return _fail(run, exc, backlog)
    except publishers.PublishFailed as exc:
        return _fail(run, DeliveryFailed(exc.reason, auth=exc.auth), backlog)
    except publishers.ClaimLost:
        return "claim lost"
    except TransportError as exc:
        return _retry_or_fail(run, exc, backlog)
    if isinstance(step, publishers.Wait):
        return _wait(run, step, backlog)
    return _published(run, step, backlog)


def _wait(run: Run, step: publishers.Wait, backlog: BacklogClient) -> str:
    """Processing, quota or pacing: the same row is due again later (not a retry)."""
    if step.comment:
        try:
            backlog.add_comment(run.task.issue_key, step.comment)
        except BacklogError as exc:
            logger.warning("wait comment on %s failed: %s", run.task.issue_key, exc)
    run.release(due_at=step.due_at, last_error=step.reason)
    return f"waiting until {step.due_at.isoformat()}: {step.reason}"


def _published(run: Run, step: publishers.Done, backlog: BacklogClient) -> str:
    now = timezone.now()
    outcome = {"ok": True, "delivered_at": iso_jst(now), "channel": run.channel, "post": step.summary}
    return _sent(run, now, outcome, backlog)


def _sent(run: Run, now: datetime, outcome: dict, backlog: BacklogClient) -> str:
    """The message / post is out: 自動配信実行日時 and the write-back stage in one
    transaction, then the write-back. While other deliveries are due (a burst), the row
    is given back due now instead, so every send of the burst goes out before the
    write-backs (which are then claimed behind them)."""
    later = _others_due(run)
    with transaction.atomic():
        ContentTask.objects.filter(pk=run.task.pk).update(delivered_at=now)
        _to_writeback(run, outcome, release=later)
    run.task.delivered_at = now
    metrics.delivery_ended("sent", run.channel)
    return WRITEBACK_QUEUED if later else _writeback(run, backlog)


def _others_due(run: Run) -> bool:
    if run.sends_follow:  # known without a query
        return True
    due = DeliverySchedule.objects.filter(stage=DeliverySchedule.Stage.DELIVER, due_at__lte=run.now)
    return due.exclude(pk=run.schedule.pk).exists()


# -- outcomes ------------------------------------------------------------------------


def _retry_or_fail(run: Run, exc: TransportError, backlog: BacklogClient | None = None) -> str:
    if exc.permanent:
        return _fail(run, DeliveryFailed(exc.message, auth=exc.auth), backlog)
    delay = next_delay(run.schedule.attempts, exc.retry_after)
    if delay is None:
        return _fail(
            run,
            DeliveryFailed(
                f"再試行の上限（{run.schedule.attempts} 回）に達しました。最後のエラー: {exc.message}"
            ),
            backlog,
        )
    run.release(due_at=timezone.now() + delay, attempts=run.schedule.attempts + 1, last_error=exc.message)
    metrics.delivery_ended("retry", run.task.channel)
    return f"retry in {int(delay.total_seconds())}s"


def _succeed(run: Run, plan, done: dict[int, DeliveryAttempt], backlog: BacklogClient) -> str:
    now = timezone.now()
    recipients = sum(1 if kind == "push" else len(to) for kind, to in plan)
    outcome = {
        "ok": True,
        "delivered_at": iso_jst(now),
        "recipients": recipients,
        "request_ids": [done[i].request_id for i in sorted(done)],
    }
    return _sent(run, now, outcome, backlog)


def _fail(run: Run, exc: DeliveryFailed, backlog: BacklogClient | None) -> str:
    if exc.auth:
        _token_expired(run, exc.reason)
    channel = {"channel": run.channel} if run.channel != "line" else {}
    _to_writeback(run, {"ok": False, "reason": exc.reason, "auth": exc.auth, **channel})
    metrics.delivery_ended("failed", run.task.channel)
    if backlog is None:
        run.release(due_at=timezone.now())
        return "failed; write-back queued"
    return _writeback(run, backlog)


def _to_writeback(run: Run, outcome: dict, *, release: bool = False) -> None:
    """`release`: also give the claim back, due now (the write-back is claimed later)."""
    changes = {"stage": DeliverySchedule.Stage.WRITEBACK, "outcome": outcome, "attempts": 0, "last_error": ""}
    if release:
        changes |= {"lease_until": None, "claimed_by": "", "due_at": timezone.now()}
    if DeliverySchedule.objects.filter(pk=run.schedule.pk, claimed_by=run.token).update(**changes):
        for name, value in changes.items():  # what the row now holds; its task and tenant stay loaded
            setattr(run.schedule, name, value)
    else:
        run.schedule.refresh_from_db()


def _token_expired(run: Run, reason: str) -> None:
    if run.channel != "line":
        account = ChannelAccount.objects.filter(tenant=run.tenant, channel=run.channel).first()
        if account is not None:
            token_expired_notice(account=account, reason=reason, issue_key=run.task.issue_key)
        return
    Tenant.objects.filter(pk=run.tenant.pk).update(line_token_invalid_at=timezone.now())
    mail_admins(
        f"[automedia] LINE トークンの更新が必要です（{run.tenant.name}）",
        f"テナント {run.tenant.slug} の LINE チャネルへの配信が認証エラーで失敗しました。\n"
        f"課題: {run.task.issue_key}\n理由: {reason}\n管理画面でチャネルアクセストークンを更新してください。",
    )


# -- Backlog write-back ---------------------------------------------------------------


def _writeback(run: Run, backlog: BacklogClient) -> str:
    """One PATCH: status, 自動配信実行日時 and the comment; retried until Backlog accepts it."""
    outcome, task, project = run.schedule.outcome, run.task, run.tenant.backlog_project_key
    try:
        if outcome.get("tried") and _already_written(backlog, task, outcome):
            return _finish(run, outcome, backlog)
        DeliverySchedule.objects.filter(pk=run.schedule.pk).update(outcome={**outcome, "tried": True})
        if outcome["ok"]:
            field_id = backlog.custom_field_id(project, FIELD_DELIVERED_AT)
            backlog.update_issue(
                task.issue_key,
                status_id=_status_id(backlog, project, STATUS_DELIVERED),
                custom_fields={field_id: outcome["delivered_at"]} if field_id else None,
                comment=_success_comment(outcome),
            )
        else:
            backlog.update_issue(
                task.issue_key,
                status_id=_status_id(backlog, project, STATUS_ERROR),
                comment=_failure_comment(outcome),
            )
    except BacklogError as exc:
        delay = writeback_delay(run.schedule.attempts)
        run.release(due_at=timezone.now() + delay, attempts=run.schedule.attempts + 1, last_error=str(exc))
        logger.warning("write-back of %s failed, retry in %s: %s", task.issue_key, delay, exc)
        return "write-back retry"
    return _finish(run, outcome, backlog)


def _already_written(backlog: BacklogClient, task: ContentTask, outcome: dict) -> bool:
    """After a crash between PATCH and cleanup, don't comment twice."""
    state = issue_read(client=backlog, issue_key=task.issue_key)
    if state is None:
        return True
    expected = STATUS_DELIVERED if outcome["ok"] else STATUS_ERROR
    return state.status_name == expected


def _status_id(backlog: BacklogClient, project: str, name: str) -> int:
    status_id = backlog.status_id(project, name)
    if status_id is None:
        raise BacklogError(f"プロジェクト {project} に状態「{name}」がありません", status=400)
    return status_id


def _finish(run: Run, outcome: dict, backlog: BacklogClient | None = None) -> str:
    status = STATUS_DELIVERED if outcome["ok"] else STATUS_ERROR
    mirror = {"status_name": status}
    if backlog is not None:  # so the webhook of this write-back finds nothing to do
        mirror["status_id"] = backlog.status_id(run.tenant.backlog_project_key, status)
    with transaction.atomic():
        ContentTask.objects.filter(pk=run.task.pk).update(**mirror)
        if outcome["ok"] and run.task.delivered_at:  # planned once, with the row's removal
            effect_reports_plan(
                task=run.task, delivered_at=run.task.delivered_at, line_recipients=outcome.get("recipients")
            )
        DeliverySchedule.objects.filter(pk=run.schedule.pk).delete()
    return "delivered" if outcome["ok"] else "failed"


def _success_comment(outcome: dict) -> str:
    if outcome.get("channel"):
        return "\n".join([f"[automedia] dispatched at {outcome['delivered_at']}", *outcome["post"]["lines"]])
    ids = ", ".join(outcome["request_ids"])
    return (
        f"[automedia] dispatched at {outcome['delivered_at']}\n"
        f"LINE に配信しました。配信先: {outcome['recipients']} 件\nLINE リクエストID: {ids}"
    )


def _failure_comment(outcome: dict) -> str:
    text = f"[automedia] failed: {outcome['reason']}"
    if outcome.get("auth") and outcome.get("channel"):
        label = CHANNEL_LABELS.get(outcome["channel"], outcome["channel"])
        text += f"\n{label} のトークンが期限切れか無効です。管理画面の「チャネルアカウント」か manage.py add_channel でトークンを更新してから、もう一度承認してください。"
    elif outcome.get("auth"):
        text += "\nLINE チャネルのトークンが期限切れか無効です。管理画面でトークンを更新してから、もう一度承認してください。"
    return (
        text
        + f"\n（{fmt_jst(timezone.now())}）内容を修正して、もう一度「automedia承認」にすると再実行します。"
    )

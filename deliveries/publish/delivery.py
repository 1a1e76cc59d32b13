"""`deliver`: one claimed schedule → its channel's publisher exactly once → one Backlog write-back.

Claim → lock per (tenant, issue) → idempotency (自動配信実行日時) → re-check in Backlog →
render → publish → record, the row given back for its write-back (deliveries/writeback/issue_update.py).
No transaction or row lock is held across an HTTP call; every step tolerates running twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from backlog_bridge.client import BacklogClient, BacklogError, shared_client
from core import metrics
from core.channels import DEFAULT_CHANNEL
from core.group_commit import GroupCommit, Together
from core.holders import token_intact
from core.models import Tenant
from core.quiet_hours import QuietAction, quiet_hours_apply
from core.retry import backlog_budget_spent, backlog_delay, retry_delay
from core.timeutil import iso_jst
from core.transport import TransportError
from deliveries.approve.lifecycle import issue_reconcile
from deliveries.channels.models import ChannelPost
from deliveries.channels.posts import committed_post
from deliveries.channels.publisher_base import ClaimLost, Context, Done, PublishFailed, Wait
from deliveries.channels.publishing import content_render, outcome_fields, publish_step
from deliveries.channels.registry import kind_of
from deliveries.channels.token_upkeep import channel_token_expired
from deliveries.claimed import SCHEDULE_LEASE, issue_lock_take, lease_release, lease_renew
from deliveries.issues import IssueState, issue_read, issue_state
from deliveries.locks import lock_release
from deliveries.models import ContentTask, DeliverySchedule, lease_length
from deliveries.publish.sent import Moved, Sent, sends_record, to_writeback
from deliveries.writeback.issue_update import writeback_claimed

logger = logging.getLogger(__name__)

WRITEBACK_QUEUED = "sent; write-back queued"
FAILED_QUEUED = "failed; write-back queued"

# A permanent failure: the task ends in automediaエラー with `reason`. One class for every
# channel's publisher and for the run itself; the name is what callers import.
DeliveryFailed = PublishFailed


# -- entry point ---------------------------------------------------------------------


@dataclass
class Run:
    """One claimed run of one schedule."""

    schedule: DeliverySchedule
    token: str
    now: datetime
    channel: str = DEFAULT_CHANNEL  # the channel whose publisher takes over
    issue: dict | None = None  # the issue as read for the whole batch (batch_reads.issues_prefetch)
    holds_lock: bool = False  # the delivery lock of (tenant, issue) is this run's to release
    fresh: bool = False  # its batch found no post and no accepted send of this approval yet
    writes: GroupCommit = field(default_factory=GroupCommit)  # its batch's (core/group_commit.py)

    @property
    def task(self) -> ContentTask:
        return self.schedule.task

    @property
    def tenant(self) -> Tenant:
        return self.schedule.tenant

    @property
    def due_at(self) -> datetime:
        """When this delivery was due: a Backlog retry moves the row's due_at, not its lateness."""
        since = self.schedule.backlog_failing_since
        return min(self.schedule.due_at, since) if since else self.schedule.due_at

    def release(self, **changes) -> None:
        lease_release(schedule_id=self.schedule.pk, token=self.token, **changes)

    def still_mine(self) -> bool:
        """Before each send: is the claim still ours? A claim with more than half its lease
        left, whose holder (this process, core/holders.py) still holds its lock, cannot have
        been taken (nobody claims it before lease_until while its holder lives), so only
        another one is renewed, which also tells whether it was lost."""
        now, lease = timezone.now(), lease_length()
        held = self.schedule.lease_until
        if held is not None and held - now > lease / 2 and token_intact(self.token):
            return True
        if not lease_renew(schedule_id=self.schedule.pk, token=self.token, now=now):
            return False
        self.schedule.lease_until = now + lease
        return True


@dataclass(frozen=True)
class Batched:
    """What a run's batch already did for it under the run's token, moments before the run,
    so that the run does not do it again."""

    schedule: DeliverySchedule  # the row, with its task and tenant
    # The issue's JSON, read for the whole batch (publish/batch_reads.py) or ahead of the due
    # second (prepare/ahead.py); None: the re-check reads it.
    issue: dict | None = None
    locked: bool = False  # the issue's delivery lock is taken (deliveries/locks.py `locks_take`)
    # Holding the claim and the lock, the batch found neither a platform post nor an accepted
    # LINE send of this approval (batch_reads.sent_before): the run does not ask again.
    fresh: bool = False
    # The batch's group commit: the run's records (a send's, the write-back's) commit with
    # the other rows' (see `_sent`).
    writes: GroupCommit = field(default_factory=GroupCommit)


def delivery_run(*, schedule_id: int, token: str, batch: Batched | None = None) -> str:
    """Run one claimed schedule. `batch`: what its batch already did for it (`Batched`);
    without it, the run reads its row and does the rest itself. Every write of the run
    checks the claim's token."""
    batch = batch or _read(schedule_id, token)
    if batch is None:
        return "not claimed"  # deleted, or the lease passed to another scheduler
    schedule = batch.schedule
    if schedule.stage == DeliverySchedule.Stage.WRITEBACK:  # the send is done: only its write-back is left
        return writeback_claimed(
            schedule=schedule,
            token=token,
            backlog=shared_client(schedule.tenant),
            locked=batch.locked,
            writes=batch.writes,
        )
    run = Run(
        schedule=schedule,
        token=token,
        now=timezone.now(),
        issue=batch.issue,
        holds_lock=batch.locked,
        fresh=batch.fresh,
        writes=batch.writes,
    )
    first_try = schedule.attempts == 0 and schedule.backlog_failing_since is None
    if first_try:
        metrics.fired((run.now - schedule.due_at).total_seconds())
    if not batch.locked and not issue_lock_take(schedule=schedule, token=token, now=run.now):
        return "locked"
    run.holds_lock = True
    try:
        return _deliver(run, shared_client(run.tenant))
    finally:
        if run.holds_lock:
            lock_release(tenant=run.tenant, issue_key=schedule.task.issue_key, owner=token)


def _read(schedule_id: int, token: str) -> Batched | None:
    """A run without a batch: its row, if still claimed under `token`."""
    schedule = (
        DeliverySchedule.objects.select_related("task", "tenant")
        .filter(SCHEDULE_LEASE.mine(token), pk=schedule_id)
        .first()
    )
    return None if schedule is None else Batched(schedule=schedule)


# -- delivering ----------------------------------------------------------------------


def _deliver(run: Run, backlog: BacklogClient) -> str:
    try:
        if run.issue is not None:
            state = issue_state(run.issue)
        else:
            state = issue_read(client=backlog, issue_key=run.task.issue_key)
    except BacklogError as exc:
        return _backlog_retry_or_fail(run, exc)
    _backlog_answered(run)
    # Once a platform publish call may have gone out, only its outcome is read: an edit
    # or quiet hours must not strand a post that is (probably) already public.
    committed = None if run.fresh else committed_post(run.task)
    if committed is None or state is None or state.delivered_at:
        verdict = _recheck(run, state, backlog)
        if verdict:
            return verdict
    channel = committed.channel if committed is not None else state.parsed.channel
    return _publish(run, state, channel, committed, backlog)


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
    quiet = quiet_hours_apply(quiet=tenant.quiet_hours_config(), when=run.now)
    if quiet.action == QuietAction.DEFER:
        run.release(due_at=quiet.due_at)
        return f"deferred to {quiet.due_at.isoformat()}"
    if quiet.action == QuietAction.REJECT:
        return _fail(run, DeliveryFailed(f"配信時刻が静粛時間帯です。{quiet.verdict.message}"))
    return ""


# -- publishing (deliveries/channels/<kind>/publisher.py) ------------------------------


def _publish(
    run: Run, state: IssueState, channel: str, committed: ChannelPost | None, backlog: BacklogClient
) -> str:
    run.channel = kind_of(channel)
    override = run.task.command_override if run.schedule.reason == DeliverySchedule.Reason.COMMAND else {}
    try:
        # A committed post goes on with what it started with, even if the issue changed since.
        content = committed.details.get("content") if committed is not None else None
        content = content or content_render(
            tenant=run.tenant, channel=run.channel, parsed=state.parsed, override=override
        )
        ctx = Context(
            tenant=run.tenant,
            task=run.task,
            content=content,
            audience=override.get("audience") or state.parsed.audience,
            now=run.now,
            still_mine=run.still_mine,
            due_at=run.due_at,
            nothing_sent=run.fresh,
        )
        step = publish_step(channel=run.channel, ctx=ctx)
    except DeliveryFailed as exc:
        return _fail(run, exc)
    except ClaimLost:
        return "claim lost"
    except TransportError as exc:
        return _retry_or_fail(run, exc)
    if isinstance(step, Wait):
        return _wait(run, step, backlog)
    return _published(run, step)


def _wait(run: Run, step: Wait, backlog: BacklogClient) -> str:
    """Processing, quota or pacing: the same row is due again later (not a retry)."""
    if step.comment:
        try:
            backlog.add_comment(run.task.issue_key, step.comment)
        except BacklogError as exc:
            logger.warning("wait comment on %s failed: %s", run.task.issue_key, exc)
    run.release(due_at=step.due_at, last_error=step.reason)
    return f"waiting until {step.due_at.isoformat()}: {step.reason}"


def _published(run: Run, step: Done) -> str:
    now = timezone.now()
    fields = outcome_fields(run.channel, step.summary)
    outcome = {"ok": True, "delivered_at": iso_jst(now), "channel": run.channel, **fields}
    return _sent(run, now, outcome, records=step.records)


def _sent(run: Run, now: datetime, outcome: dict, *, records: list) -> str:
    """The message / post is out: 自動配信実行日時 and the row's move to the write-back stage,
    given back due now, in one transaction shared with the batch's other rows that recorded a
    send meanwhile (one statement per table for them all: deliveries/publish/sent.py). The
    write-back is the write-backs' queue's (deliveries/writeback/queue.py): it never holds
    this worker or the tenant's room for sends."""
    moved = Moved(schedule=run.schedule, token=run.token, outcome=outcome, release=True)
    run.writes.write(Together(sends_record, Sent(moved=moved, at=now, attempts=records)))
    run.holds_lock = False  # given back with the move
    run.task.delivered_at = now
    metrics.delivery_ended("sent", run.channel)
    return WRITEBACK_QUEUED


# -- outcomes ------------------------------------------------------------------------


def _retry_or_fail(run: Run, exc: TransportError) -> str:
    if exc.permanent:
        return _fail(run, DeliveryFailed(exc.message, auth=exc.auth))
    delay = retry_delay("delivery", run.schedule.attempts + 1, exc.retry_after)
    if delay is None:
        return _fail(
            run,
            DeliveryFailed(
                f"再試行の上限（{run.schedule.attempts} 回）に達しました。最後のエラー: {exc.message}"
            ),
        )
    run.release(due_at=timezone.now() + delay, attempts=run.schedule.attempts + 1, last_error=exc.message)
    metrics.delivery_ended("retry", run.task.channel)
    return f"retry in {int(delay.total_seconds())}s"


def _backlog_retry_or_fail(run: Run, exc: BacklogError) -> str:
    """The re-read before sending failed. Backlog is retried within seconds on a budget of its
    own (core/retry.py); the channel's retries (`attempts`) are left for the channel."""
    if not exc.retryable:
        return _fail(run, DeliveryFailed(str(exc)))
    now = timezone.now()
    since = run.schedule.backlog_failing_since or now
    if backlog_budget_spent(now - since):
        minutes = int((now - since).total_seconds() // 60)
        reason = f"Backlog に {minutes} 分間接続できず、配信前の再確認ができませんでした。最後のエラー: {exc}"
        return _fail(run, DeliveryFailed(reason))  # written back once Backlog answers
    delay = backlog_delay(now - since, exc.retry_after)
    run.release(due_at=now + delay, last_error=str(exc), backlog_failing_since=since)
    metrics.delivery_ended("backlog_retry", run.task.channel)
    return f"backlog retry in {delay.total_seconds():.1f}s"


def _backlog_answered(run: Run) -> None:
    """Backlog is back: its budget starts again at the next failure."""
    if run.schedule.backlog_failing_since is not None:
        DeliverySchedule.objects.filter(pk=run.schedule.pk).update(backlog_failing_since=None)


def _fail(run: Run, exc: DeliveryFailed) -> str:
    if exc.auth:
        _token_expired(run, exc.reason)
    outcome = {"ok": False, "reason": exc.reason, "auth": exc.auth, "channel": run.channel}
    if run.holds_lock:  # before the row is free: its write-back must not find it locked
        lock_release(tenant=run.tenant, issue_key=run.task.issue_key, owner=run.token)
        run.holds_lock = False
    to_writeback([Moved(schedule=run.schedule, token=run.token, outcome=outcome, release=True)])
    metrics.delivery_ended("failed", run.task.channel)
    return FAILED_QUEUED


def _token_expired(run: Run, reason: str) -> None:
    channel_token_expired(tenant=run.tenant, channel=run.channel, issue_key=run.task.issue_key, reason=reason)

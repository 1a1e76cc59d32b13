"""How deliveries ended, for the dashboard's outcomes per day.

A `DeliveryOutcome` row is recorded when a run ends. An ending without one (a worker died
between the end and the record) is derived from the traces it left: the attempt rows of
its approval, the task's 自動配信実行日時 and status, a platform's ChannelPost. Skips and
failures before any request leave no such trace and are not derived.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, Q, QuerySet

from console.models import DeliveryOutcome
from core.access import scope
from core.retry import max_attempts
from deliveries.channels.models import ChannelPost
from deliveries.models import STATUS_ERROR, ContentTask, DeliveryAttempt

SENT = DeliveryOutcome.Kind.SENT
FAILED = DeliveryOutcome.Kind.FAILED
DELIVERED = (DeliveryAttempt.Outcome.SENT, DeliveryAttempt.Outcome.DUPLICATE)
# A run's outcome is recorded when its write-back to Backlog ends: at once, unless
# Backlog is down and the write-back is retried (core.retry.writeback_delay).
RECORD_DELAY = timedelta(days=1)
CLOCK_SKEW = timedelta(minutes=1)  # the record may be written by another worker's clock


@dataclass(frozen=True)
class Ending:
    task_id: int
    kind: str  # DeliveryOutcome.Kind
    at: datetime


@dataclass(frozen=True)
class Approval:
    """The attempts of one approval of a task: one delivery."""

    task_id: int
    seq: int
    last_at: datetime
    last_outcome: str
    retries: int


def delivery_endings(*, user, since: datetime, until: datetime | None = None) -> list[Ending]:
    """Every delivery ending in [since, until) in the user's tenants: recorded, or derived when unrecorded.

    A record after `until` is not read, so the ending it accounts for is shown derived, once.
    """
    outcomes = scope(DeliveryOutcome.objects.filter(created_at__gte=since), user)
    if until is not None:
        outcomes = outcomes.filter(created_at__lt=until)
    recorded = [Ending(*row) for row in outcomes.values_list("task_id", "kind", "created_at")]
    deliveries = DeliveryAttempt.objects.filter(correction__isnull=True)  # a correction is not an ending
    derived = derived_endings(attempts=scope(deliveries, user), since=since - RECORD_DELAY, until=until)
    unrecorded = unaccounted(derived=derived, recorded=recorded)
    return recorded + [e for e in unrecorded if e.at >= since and (until is None or e.at < until)]


def derived_endings(*, attempts: QuerySet, since: datetime, until: datetime | None = None) -> list[Ending]:
    """How the approvals with an attempt since `since` ended, read from the rows they left.

    `until`: only approvals whose last attempt came before it (a delivery ends after its last request).
    """
    approvals = _approvals(attempts, since, until)
    task_ids = {a.task_id for a in approvals}
    tasks = ContentTask.objects.only("approval_seq", "delivered_at", "status_name").in_bulk(task_ids)
    posts = {
        (p.task_id, p.approval_seq): p
        for p in ChannelPost.objects.filter(task_id__in=task_ids).only(
            "task_id", "approval_seq", "phase", "published_at"
        )
    }
    endings = (_ending(a, tasks[a.task_id], posts.get((a.task_id, a.seq))) for a in approvals)
    return [e for e in endings if e is not None]


def _approvals(attempts: QuerySet, since: datetime, until: datetime | None) -> list[Approval]:
    recent = attempts.filter(created_at__gte=since).values("task_id")
    groups = (
        attempts.filter(task_id__in=recent)
        .values("task_id", "approval_seq")
        .annotate(
            last_at=Max("created_at"),
            retries=Count("id", filter=Q(outcome=DeliveryAttempt.Outcome.RETRY)),
        )
        .filter(last_at__gte=since)
    )
    groups = list(groups if until is None else groups.filter(last_at__lt=until))
    last = _last_outcomes(attempts, groups)
    return [
        Approval(
            g["task_id"], g["approval_seq"], g["last_at"], last[g["task_id"], g["approval_seq"]], g["retries"]
        )
        for g in groups
    ]


def _last_outcomes(attempts: QuerySet, groups: list[dict]) -> dict[tuple[int, int], str]:
    """The outcome of each approval's latest attempt (the highest id among equal times)."""
    rows = attempts.filter(
        task_id__in={g["task_id"] for g in groups}, created_at__in={g["last_at"] for g in groups}
    ).order_by("created_at", "id")
    last_at = {(g["task_id"], g["approval_seq"]): g["last_at"] for g in groups}
    outcomes = {}
    for task_id, seq, at, outcome in rows.values_list("task_id", "approval_seq", "created_at", "outcome"):
        if last_at.get((task_id, seq)) == at:
            outcomes[task_id, seq] = outcome
    return outcomes


def _ending(approval: Approval, task: ContentTask, post: ChannelPost | None) -> Ending | None:
    if approval.seq == task.approval_seq:
        return _current_ending(approval, task)
    # An earlier approval: its task has been approved again since (after a failure, or
    # after a manager cleared 自動配信実行日時 to send it once more).
    if post is not None and post.phase == ChannelPost.Phase.DONE:
        return Ending(task.pk, SENT, post.published_at or approval.last_at)
    if post is None and approval.last_outcome in DELIVERED:  # LINE: the last chunk went out
        return Ending(task.pk, SENT, approval.last_at)
    given_up = approval.retries >= max_attempts("delivery")
    if approval.last_outcome == DeliveryAttempt.Outcome.FAILED or given_up:
        return Ending(task.pk, FAILED, approval.last_at)
    return None  # cancelled while it was being retried


def _current_ending(approval: Approval, task: ContentTask) -> Ending | None:
    if task.delivered_at is not None:
        return Ending(task.pk, SENT, task.delivered_at)
    if task.status_name == STATUS_ERROR:
        return Ending(task.pk, FAILED, approval.last_at)
    return None  # still running or being retried, or cancelled


def unaccounted(*, derived: list[Ending], recorded: list[Ending]) -> list[Ending]:
    """The derived endings no recorded outcome accounts for.

    A record accounts for one ending of its task and kind: the latest one before it
    (records are written when a run has ended, never before).
    """
    pending: dict[tuple[int, str], list[Ending]] = defaultdict(list)
    for ending in sorted(derived, key=lambda e: e.at):
        pending[ending.task_id, ending.kind].append(ending)
    for record in sorted(recorded, key=lambda e: e.at):
        candidates = pending.get((record.task_id, record.kind), [])
        for ending in reversed(candidates):
            if record.at - RECORD_DELAY <= ending.at <= record.at + CLOCK_SKEW:
                candidates.remove(ending)
                break
    return [e for endings in pending.values() for e in endings]

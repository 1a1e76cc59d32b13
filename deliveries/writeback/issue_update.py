"""The Backlog write-back of an ended delivery: one PATCH (status, 自動配信実行日時, comment),
retried until Backlog accepts it; the message is never sent again (seed 001)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.utils import timezone

from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.statuses import BacklogConfigError, status_id_require
from core.group_commit import GroupCommit, Together
from core.retry import writeback_delay
from core.statements import rows_insert, rows_update
from deliveries.channels.effect_reports import effect_report_rows
from deliveries.claimed import issue_lock_take, lease_release
from deliveries.issues import issue_read
from deliveries.locks import lock_release
from deliveries.models import (
    FIELD_DELIVERED_AT,
    STATUS_DELIVERED,
    STATUS_ERROR,
    ContentTask,
    DeliverySchedule,
)
from deliveries.signals import delivery_failed
from deliveries.writeback.outcome_comments import failure_comment, success_comment

logger = logging.getLogger(__name__)


def writeback_claimed(
    *,
    schedule: DeliverySchedule,
    token: str,
    backlog: BacklogClient,
    locked: bool = False,
    writes: GroupCommit | None = None,
) -> str:
    """A claimed row at the write-back stage, written back under its issue's delivery lock
    (`locked`: its batch took the lock already). The lock is given back at the end."""
    if not locked and not issue_lock_take(schedule=schedule, token=token, now=timezone.now()):
        return "locked"
    try:
        return writeback_run(schedule=schedule, token=token, backlog=backlog, writes=writes)
    finally:
        lock_release(tenant=schedule.tenant, issue_key=schedule.task.issue_key, owner=token)


def writeback_run(
    *, schedule: DeliverySchedule, token: str, backlog: BacklogClient, writes: GroupCommit | None = None
) -> str:
    """One PATCH: status, 自動配信実行日時 and the comment; retried until Backlog accepts it.
    `writes`: the batch's group commit (core/group_commit.py), which commits this row's
    writes with the other rows' that are waiting."""
    writes = writes or GroupCommit()
    outcome, task, project = schedule.outcome, schedule.task, schedule.tenant.backlog_project_key
    try:
        if outcome.get("tried") and _already_written(backlog, task, outcome):
            return _finish(schedule, outcome, writes, backlog)
        writes.write(Together(_tried, (schedule.pk, {**outcome, "tried": True})))  # before the PATCH
        if outcome["ok"]:
            field_id = backlog.custom_field_id(project, FIELD_DELIVERED_AT)
            backlog.update_issue(
                task.issue_key,
                status_id=_status_id(backlog, project, STATUS_DELIVERED),
                custom_fields={field_id: outcome["delivered_at"]} if field_id else None,
                comment=success_comment(outcome),
            )
        else:
            backlog.update_issue(
                task.issue_key,
                status_id=_status_id(backlog, project, STATUS_ERROR),
                comment=failure_comment(outcome),
            )
    except BacklogError as exc:
        return _retry(schedule, token, exc)
    return _finish(schedule, outcome, writes, backlog)


def _retry(schedule: DeliverySchedule, token: str, exc: BacklogError) -> str:
    now = timezone.now()
    since = schedule.backlog_failing_since or now
    delay = writeback_delay(
        schedule.attempts + 1, retryable=exc.retryable, failing_for=now - since, retry_after=exc.retry_after
    )
    lease_release(
        schedule_id=schedule.pk,
        token=token,
        due_at=now + delay,
        attempts=schedule.attempts + 1,
        last_error=str(exc),
        backlog_failing_since=since,
    )
    logger.warning("write-back of %s failed, retry in %s: %s", schedule.task.issue_key, delay, exc)
    return "write-back retry"


def _already_written(backlog: BacklogClient, task: ContentTask, outcome: dict) -> bool:
    """After a crash between PATCH and cleanup, don't comment twice."""
    state = issue_read(client=backlog, issue_key=task.issue_key)
    if state is None:
        return True
    expected = STATUS_DELIVERED if outcome["ok"] else STATUS_ERROR
    return state.status_name == expected


def _status_id(backlog: BacklogClient, project: str, name: str) -> int:
    try:
        return status_id_require(client=backlog, project_key=project, name=name)
    except BacklogConfigError as exc:
        # Retried like a refused PATCH: a manager may add the status.
        raise BacklogError(str(exc), status=400) from exc


def _finish(
    schedule: DeliverySchedule, outcome: dict, writes: GroupCommit, backlog: BacklogClient | None = None
) -> str:
    task = schedule.task
    status = STATUS_DELIVERED if outcome["ok"] else STATUS_ERROR
    mirror = {"status_name": status}
    if backlog is not None:  # so the webhook of this write-back finds nothing to do
        mirror["status_id"] = backlog.status_id(schedule.tenant.backlog_project_key, status)

    writes.write(Together(_finished, _Finished(schedule=schedule, outcome=outcome, mirror=mirror)))
    if not outcome["ok"]:  # the failure notice (linepush), deduplicated per approval there
        delivery_failed.send(ContentTask, task=task, reason=outcome["reason"], auth=bool(outcome.get("auth")))
    return "delivered" if outcome["ok"] else "failed"


# -- the rows of a commit group's write-backs, one statement per table for them all ---


def _tried(marks: list[tuple[int, dict]]) -> None:
    """Each schedule's outcome marked as tried before its PATCH."""
    outcomes = dict(marks)
    rows_update(DeliverySchedule, list(outcomes), each={"outcome": outcomes})


@dataclass(frozen=True)
class _Finished:
    schedule: DeliverySchedule  # its task loaded
    outcome: dict
    mirror: dict  # the Backlog status the task now has


def _finished(ended: list[_Finished]) -> None:
    """The tasks' mirrored status, their effect reports (planned once, with the schedule's
    removal) and the schedules' removal."""
    by_mirror: dict[tuple, list[int]] = {}
    for end in ended:
        by_mirror.setdefault(tuple(sorted(end.mirror.items())), []).append(end.schedule.task_id)
    for mirror, task_ids in by_mirror.items():
        rows_update(ContentTask, task_ids, same=dict(mirror))
    reports = [
        report
        for end in ended
        if end.outcome["ok"] and end.schedule.task.delivered_at
        for report in effect_report_rows(
            task=end.schedule.task, delivered_at=end.schedule.task.delivered_at, outcome=end.outcome
        )
    ]
    if reports:
        rows_insert(reports, ignore_conflicts=True)
    DeliverySchedule.objects.filter(pk__in=[end.schedule.pk for end in ended]).delete()

"""What a send leaves in the database, for all the rows of a commit group at once.

A row that has sent records its accepted attempts, the task's 自動配信実行日時 and its
schedule's move to the write-back stage (deliveries/publish/delivery.py `_sent`): one statement per
table for the group (core/group_commit.py). Each schedule's UPDATE checks its claim; if a
claim was lost meanwhile, the group is made again row by row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from core.statements import rows_insert, rows_update
from deliveries.claimed import SCHEDULE_LEASE
from deliveries.locks import locks_release
from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule


class ClaimsChanged(Exception):
    """Fewer schedules were still claimed than the group's UPDATE was made for."""


@dataclass(frozen=True)
class Moved:
    """A schedule to the write-back stage with its send's (or failure's) `outcome`."""

    schedule: DeliverySchedule  # as claimed under `token`, its task loaded
    token: str
    outcome: dict
    release: bool = False  # the run ends here: claim and lock given back, due now


@dataclass(frozen=True)
class Sent:
    moved: Moved
    at: datetime  # 自動配信実行日時
    attempts: list[DeliveryAttempt]  # the accepted sends, with their outcome


def sends_record(sends: list[Sent]) -> None:
    """The sends' attempts, tasks and schedules (and the locks of those that end here)."""
    attempts = [attempt for sent in sends for attempt in sent.attempts]
    for attempt in attempts:  # made again alone if its group's commit failed: no pk kept from that try
        attempt.pk = None
    rows_insert(attempts)
    at = {sent.moved.schedule.task_id: sent.at for sent in sends}
    rows_update(ContentTask, list(at), each={"delivered_at": at})
    to_writeback([sent.moved for sent in sends])
    ended = [sent.moved for sent in sends if sent.moved.release]
    for token in {moved.token for moved in ended}:
        keys = [(m.schedule.tenant_id, m.schedule.task.issue_key) for m in ended if m.token == token]
        locks_release(keys=keys, owner=token)


def to_writeback(moves: list[Moved]) -> None:
    """Each schedule to the write-back stage, if its claim is still held; the loaded rows
    then hold what was written (their task and tenant stay loaded). A lone row whose claim
    was lost is read back; in a group, the group is made again row by row."""
    now = timezone.now()
    for token, release in {(moved.token, moved.release) for moved in moves}:
        mine = [moved for moved in moves if (moved.token, moved.release) == (token, release)]
        changes = {
            "stage": DeliverySchedule.Stage.WRITEBACK,
            "attempts": 0,
            "last_error": "",
            "backlog_failing_since": None,  # the write-back's own Backlog failures start afresh
        }
        if release:
            changes |= {**SCHEDULE_LEASE.freed(), "due_at": now}
        outcomes = {moved.schedule.pk: moved.outcome for moved in mine}
        updated = rows_update(
            DeliverySchedule,
            list(outcomes),
            each={"outcome": outcomes},
            same=changes,
            where=SCHEDULE_LEASE.owned(token),
        )
        if updated < len(mine) and len(moves) > 1:
            raise ClaimsChanged(f"{len(mine) - updated} of {len(mine)} claims were lost")
        for moved in mine:
            if updated:
                for name, value in {**changes, "outcome": moved.outcome}.items():
                    setattr(moved.schedule, name, value)
            else:
                moved.schedule.refresh_from_db()

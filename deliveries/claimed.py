"""A claimed schedule as the worker running it holds it: taken over from the scheduler's
claim, renewed, given back (core/due.py under SCHEDULE_LEASE), and its issue's delivery
lock taken for the run. Below every stage that runs a claimed row (the send, the write-back,
the preparation ahead), so none of them imports another for it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from core.due import release, renew, take_over
from core.keeper import Held, held_claim
from deliveries.locks import lock_take
from deliveries.models import DeliverySchedule

SCHEDULE_LEASE = DeliverySchedule.LEASE  # lease_until / claimed_by
LOCKED_AGAIN = timedelta(seconds=5)  # a row whose issue another run holds is due again after this


def schedules_take(*, claims: list[tuple[int, str]], now: datetime) -> dict[int, Held]:
    """A task's start: {schedule id: the claim as this worker now holds it} for each row
    it was handed that is still its own or still queued (core/due.py `take_over`: one
    UPDATE for the batch, one token for all its rows)."""
    pks = [schedule_id for schedule_id, _ in claims]
    mine, taken = take_over(
        DeliverySchedule, pks=pks, now=now, lease=SCHEDULE_LEASE, token=[token for _, token in claims]
    )
    return {
        pk: held_claim(DeliverySchedule, pk=pk, lease=SCHEDULE_LEASE, now=now, owner=mine) for pk in taken
    }


def lease_renew(*, schedule_id: int, token: str, now: datetime) -> bool:
    """Extend a claim before each slow step; False when the claim was lost."""
    return renew(DeliverySchedule, pk=schedule_id, now=now, lease=SCHEDULE_LEASE, owner=token)


def lease_release(*, schedule_id: int, token: str, **changes) -> bool:
    """Give the row back (optionally with a new due time, error, …) if we still hold it."""
    return release(DeliverySchedule, pk=schedule_id, lease=SCHEDULE_LEASE, owner=token, **changes)


def issue_lock_take(*, schedule: DeliverySchedule, token: str, now: datetime) -> bool:
    """The delivery lock of the row's issue, for its run (one run of an issue at a time:
    a send and a write-back of the same issue never run side by side). When another run
    holds it, the row is given back due again shortly and the answer is False."""
    if lock_take(tenant=schedule.tenant, issue_key=schedule.task.issue_key, owner=token, now=now):
        return True
    lease_release(schedule_id=schedule.pk, token=token, due_at=now + LOCKED_AGAIN)
    return False

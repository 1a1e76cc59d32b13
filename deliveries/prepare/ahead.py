"""Preparing a send before its due second, so that at the second only the publish is left.

From DELIVERY_PREPARE_SECONDS ahead, the scheduler's readers (a lane per tenant, in series,
core/lanes.py) read a tenant's due issues from Backlog and let the channel prepare what
publishes nothing (an Instagram container), then read the issue once more shortly before the
second (docs/ARCHITECTURE.md, "Preparing ahead"). A change Backlog reports by webhook drops
what was prepared.
"""

from __future__ import annotations

import functools
import logging
from datetime import datetime, timedelta
from itertools import groupby

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from backlog_bridge.client import BacklogError, paced_client
from core.due import Lease, claim
from core.lanes import Lanes
from core.models import Tenant
from core.statements import rows_update
from deliveries.channels.publisher_base import Context, PublishFailed
from deliveries.channels.publishing import content_render, prepare_send, prepares
from deliveries.claimed import SCHEDULE_LEASE
from deliveries.issues import issue_state
from deliveries.models import DeliverySchedule

logger = logging.getLogger(__name__)

DELIVER = DeliverySchedule.Stage.DELIVER
HOLD = timedelta(seconds=10)  # a handed-out row's next pass if its read is lost
ISSUES_PER_READ = 100  # Backlog's issue list answers up to 100 ids per call
# A row wanting preparing is held by its `prepare_at` alone (core/due.py, no token).
PREPARE_HOLD = Lease(length=HOLD, until="prepare_at", owner=None)


def _recheck_at(due_at: datetime) -> datetime:
    return due_at - timedelta(seconds=settings.DELIVERY_RECHECK_SECONDS * 2 / 3)


def gather() -> timedelta:
    """How far ahead of its time a row is prepared with the rows whose time has come: a
    stream of sends a second apart then makes a few tasks a second, each with one issue
    read, not one task per row. The re-read stays within DELIVERY_RECHECK_SECONDS of the
    due second by a margin as large again."""
    return timedelta(seconds=settings.DELIVERY_RECHECK_SECONDS / 6)


def prepare_claim(*, now: datetime, limit: int) -> list[int]:
    """The rows that want preparing now, held for HOLD so no other pass hands them out too."""
    return [pk for pk, _ in _claim(now=now, limit=limit)]


def _claim(*, now: datetime, limit: int) -> list[tuple[int, int]]:
    """(row id, tenant id) of the rows that want preparing now, soonest due first, claimed
    through core/due.py as at `now + gather()` (a row whose time comes within it goes with
    those whose time has come) and held HOLD from then: one read when there are none."""
    wanting = DeliverySchedule.objects.filter(
        SCHEDULE_LEASE.free(now), stage=DELIVER, prepare_at__isnull=False, due_at__gt=now
    )
    tenant_of: dict[int, int] = {}

    def noted(rows: list[DeliverySchedule]) -> list[DeliverySchedule]:
        tenant_of.update((row.pk, row.tenant_id) for row in rows)
        return rows

    # `prepare_at` is not loaded: every row wanting preparing has one, which `claim` would
    # count as a claim run out (`expired_claims_count`).
    rows = wanting.only("id", "tenant_id").order_by("due_at")
    claimed = claim(rows, now=now + gather(), lease=PREPARE_HOLD, limit=limit, choose=noted)
    return [(pk, tenant_of[pk]) for pk, _ in claimed]


@functools.cache
def readers() -> Lanes:
    """The scheduler process's Backlog readers: one lane per tenant (one Backlog user's calls
    in series, as Backlog asks: https://developer.nulab.com/docs/backlog/rate-limit), tenants
    side by side on PREPARE_THREADS threads. Neither on the default queue, where reads would
    wait behind write-backs and webhook drains, nor on a deliverer, which publishes."""
    return Lanes(threads=settings.PREPARE_THREADS, name="backlog-read")


def prepare_step(*, now: datetime, limit: int) -> bool:
    """run_scheduler's step: hand the rows that want preparing to their tenant's lane, soonest
    due first, ISSUES_PER_READ per call (one `GET /api/v2/issues?id[]=…`)."""
    found = _claim(now=now, limit=limit)
    by_tenant = sorted(found, key=lambda row: row[1])  # stable: each tenant's rows stay in due order
    for tenant_id, rows in groupby(by_tenant, key=lambda row: row[1]):
        ids = [pk for pk, _ in rows]
        for start in range(0, len(ids), ISSUES_PER_READ):
            readers().submit(tenant_id, functools.partial(prepare_run, ids[start : start + ISSUES_PER_READ]))
    return bool(found)


# -- the task ----------------------------------------------------------------------------


def prepare_run(ids: list[int]) -> int:
    """Read the rows' issues, let their channels prepare, note what was found and when the
    row wants its next pass. Returns how many rows were prepared."""
    rows = list(DeliverySchedule.objects.select_related("task", "tenant").filter(pk__in=ids, stage=DELIVER))
    issues = _issues(rows)
    now = timezone.now()
    prepared, next_pass = {}, {}
    for row in rows:
        issue = issues.get(row.task.issue_id)
        again = _channel_prepare(row, issue, now) if issue is not None else None
        prepared[row.pk] = {"issue": issue, "read_at": now.isoformat()} if issue is not None else {}
        next_pass[row.pk] = _next_pass(row.due_at, now, again)
    read = {row.pk: row.updated_at for row in rows}
    # One short transaction for the batch (on SQLite, one turn of the write lock), and not
    # over a schedule registered anew meanwhile (its `updated_at` moved).
    with transaction.atomic():
        current = DeliverySchedule.objects.filter(pk__in=list(read), stage=DELIVER)
        if connection.vendor == "postgresql":
            current = current.select_for_update()
        same = [pk for pk, at in current.values_list("pk", "updated_at") if at == read[pk]]
        return rows_update(
            DeliverySchedule,
            same,
            each={
                "prepared": {pk: prepared[pk] for pk in same},
                "prepare_at": {pk: next_pass[pk] for pk in same},
            },
        )


def _issues(rows: list[DeliverySchedule]) -> dict[int, dict]:
    """{issue id: issue JSON}: one Backlog call per tenant and 100 issues. An issue missing
    from the answer (deleted, or the call failed) is left to the send, which reads it."""
    by_tenant: dict[int, tuple[Tenant, list[int]]] = {}
    for row in rows:
        if row.task.issue_id is not None:
            by_tenant.setdefault(row.tenant_id, (row.tenant, []))[1].append(row.task.issue_id)
    found: dict[int, dict] = {}
    for tenant, wanted in by_tenant.values():
        for start in range(0, len(wanted), ISSUES_PER_READ):
            try:
                answer = paced_client(tenant).issues_by_id(wanted[start : start + ISSUES_PER_READ])
            except BacklogError as exc:
                logger.warning("preparing %s: reading issues failed: %s", tenant.slug, exc)
                continue
            found |= {issue["id"]: issue for issue in answer if issue.get("id") in wanted}
    return found


def _channel_prepare(row: DeliverySchedule, issue: dict, now: datetime) -> datetime | None:
    """The channel's preparation of this approval, if the issue is as approved; when it
    wants to look again (None: ready, or nothing to prepare)."""
    state = issue_state(issue)
    task = row.task
    if not state.approved or state.fingerprint != task.approval_fingerprint or state.delivered_at:
        return None  # the send decides (and the webhook of the change has its own path)
    channel = state.parsed.channel
    if not prepares(channel):
        return None
    try:
        content = content_render(tenant=row.tenant, channel=channel, parsed=state.parsed, override={})
        ctx = Context(tenant=row.tenant, task=task, content=content, audience=state.parsed.audience, now=now)
        return prepare_send(channel=channel, ctx=ctx)
    except PublishFailed as exc:
        logger.info("preparing %s: %s (the send reports it)", task.issue_key, exc.reason)
    except Exception:  # a preparation is never needed: the send does the same, at its second
        logger.exception("preparing %s failed", task.issue_key)
    return None


def _next_pass(due_at: datetime, now: datetime, again: datetime | None) -> datetime | None:
    """The channel's next look, else the re-read before the due second, else none. A time
    within the gathering window of now is this pass's own (the pass would only repeat)."""
    recheck = _recheck_at(due_at)
    times = [t for t in (again,) if t is not None and now < t < due_at]
    times += [recheck] if now + gather() < recheck < due_at else []
    return min(times, default=None)


# -- at the due second ----------------------------------------------------------------------


def prepared_issue(row: DeliverySchedule, now: datetime) -> dict | None:
    """The issue as read ahead for a first try, if that read is recent enough to rely on."""
    if row.attempts or row.backlog_failing_since is not None or not row.prepared.get("issue"):
        return None
    read_at = parse_datetime(row.prepared.get("read_at") or "")
    if read_at is None or now - read_at > timedelta(seconds=settings.DELIVERY_RECHECK_SECONDS):
        return None
    return row.prepared["issue"]

"""The scan's rescue of one page of leaks, with the page's new tasks and schedules written together.

Each leak is read again from Backlog and gets its own comment. A leak that is still
approved, has no task yet and passes its checks is written with the page's one INSERT of
tasks and one of schedules (one short transaction, no HTTP call inside). Anything else (an
existing task, a refusal, a LINE quota forecast that counts the others) goes through
`issue_reconcile` one by one, and so does the whole page if its INSERT meets a row written
meanwhile: never two schedules.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.statuses import BacklogConfigError
from core.models import Tenant
from deliveries.approve.actions import RegistrationPlan, registration_announce, registration_plan
from deliveries.approve.checks import approval_check_counts_others
from deliveries.approve.lifecycle import ConcurrentChange, issue_reconcile, task_mirror
from deliveries.issues import IssueState, issue_state
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.services import approval_fields, prepare_from, schedule_due_at

RECOVERABLE = (BacklogError, BacklogConfigError, ConcurrentChange)
Outcome = str | Exception  # what issue_reconcile returned, or the RECOVERABLE error it raised


@dataclass
class _Read:
    key: str  # as listed
    issue: dict | None  # Backlog's JSON now; None: gone (404)


@dataclass
class _New:
    key: str
    state: IssueState
    plan: RegistrationPlan


def leaks_rescue(*, tenant: Tenant, client: BacklogClient, keys: list[str]) -> dict[str, Outcome]:
    """Rescue the listed leaks `keys` (one page) of `tenant`; the outcome of each, by key."""
    outcomes: dict[str, Outcome] = {}
    reads = []
    for key in keys:
        try:
            reads.append(_Read(key, _issue_get(client, key)))
        except RECOVERABLE as exc:
            outcomes[key] = exc
    states = {r.key: issue_state(r.issue) for r in reads if r.issue is not None}
    known = _known(tenant, list(states.values()))
    batch: list[_New] = []
    for r in reads:
        state = states.get(r.key)
        plan = _plan(tenant, state, known) if state is not None else None
        if plan is not None:
            batch.append(_New(r.key, state, plan))
            continue
        outcomes |= _register(tenant, client, batch)  # the ones before it come first
        batch = []
        outcomes[r.key] = _reconcile(tenant, client, r.key, r.issue)
    outcomes |= _register(tenant, client, batch)
    return {key: outcomes[key] for key in keys}  # page order


def _issue_get(client: BacklogClient, key: str) -> dict | None:
    try:
        return client.get_issue(key)
    except BacklogError as exc:
        if exc.status == 404:
            return None
        raise


def _known(tenant: Tenant, states: list[IssueState]) -> set[object]:
    """The ids and keys among `states` that some task of the tenant already holds (one query)."""
    ids, keys = [s.issue_id for s in states], [s.issue_key for s in states]
    rows = ContentTask.objects.filter(Q(issue_id__in=ids) | Q(issue_key__in=keys), tenant=tenant)
    return {value for pair in rows.values_list("issue_id", "issue_key") for value in pair}


def _plan(tenant: Tenant, state: IssueState, known: set[object]) -> RegistrationPlan | None:
    """The registration `issue_reconcile` would make of a new task, when it would make one
    that the others do not change; None: leave it to `issue_reconcile`."""
    new = state.issue_id not in known and state.issue_key not in known
    decided = state.belongs_to(tenant) and state.approved and not state.delivered_at  # "register"
    if not (new and decided) or approval_check_counts_others(tenant=tenant, parsed=state.parsed):
        return None
    plan = registration_plan(tenant=tenant, state=state, task=None)
    return None if plan.refusal else plan


def _reconcile(tenant: Tenant, client: BacklogClient, key: str, issue: dict | None) -> Outcome:
    try:
        return issue_reconcile(tenant=tenant, issue_key=key, client=client, issue=issue)
    except RECOVERABLE as exc:
        return exc


def _register(tenant: Tenant, client: BacklogClient, batch: list[_New]) -> dict[str, Outcome]:
    if not batch:
        return {}
    now = timezone.now()
    tasks = [_task(tenant, new, now) for new in batch]
    schedules = [_schedule(tenant, task, new, now) for task, new in zip(tasks, batch, strict=True)]
    try:
        with transaction.atomic():
            ContentTask.objects.bulk_create(tasks)  # sets each pk (RETURNING)
            for schedule, task in zip(schedules, tasks, strict=True):
                schedule.task = task
            DeliverySchedule.objects.bulk_create(schedules)
    except IntegrityError:  # another process registered one of them meanwhile: decide afresh
        return {new.key: _reconcile(tenant, client, new.key, None) for new in batch}
    return {
        new.key: registration_announce(
            client=client, task=task, state=new.state, due_at=schedule.due_at, plan=new.plan
        )
        for new, task, schedule in zip(batch, tasks, schedules, strict=True)
    }


def _task(tenant: Tenant, new: _New, now) -> ContentTask:
    """The row `issue_reconcile` leaves behind: created, claimed once, approved once, checked."""
    return ContentTask(
        tenant=tenant,
        issue_key=new.state.issue_key,
        version=1,
        approval_seq=1,
        approval_checks=new.plan.checks.to_json(checked_at=new.plan.now),
        **task_mirror(new.state),
        **approval_fields(state=new.state, now=now),
    )


def _schedule(tenant: Tenant, task: ContentTask, new: _New, now) -> DeliverySchedule:
    due_at = schedule_due_at(publish_at=new.plan.publish_at, now=now)
    return DeliverySchedule(
        name=DeliverySchedule.name_for(tenant, task.issue_key),
        tenant=tenant,
        due_at=due_at,
        prepare_at=prepare_from(due_at),  # as schedule_upsert sets it
        reason=DeliverySchedule.Reason.SCAN,
    )

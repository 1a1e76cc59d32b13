"""From a Backlog activity to the right schedule or the right comment (seed 000/001).

Every decision re-reads the issue from the API and compares it with what automedia
accepted at approval time. Decisions are state-based, so an event that arrives
twice, late, or because automedia itself changed the issue never acts twice. The
handlers at the end are registered with backlog_bridge's event drain
(DeliveriesConfig.ready).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F
from django.utils import timezone

from backlog_bridge.activities import issue_key_of, names_many
from backlog_bridge.client import BacklogClient, BacklogError, issue_key_valid
from backlog_bridge.events import EventHandler, EventRetry
from backlog_bridge.models import (
    TYPE_BULK_UPDATED,
    TYPE_CREATED,
    TYPE_DATES_UPDATED,
    TYPE_DELETED,
    TYPE_UPDATED,
    BacklogEvent,
)
from backlog_bridge.statuses import BacklogConfigError
from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.approve.actions import ACTIONS
from deliveries.issues import IssueState, issue_read, issue_state, task_for_issue
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.services import schedule_delete

logger = logging.getLogger(__name__)

CLAIM_ROUNDS = 3


class ConcurrentChange(EventRetry):
    """Another process kept changing the same task; the event is retried later."""


def issue_reconcile(
    *, tenant: Tenant, issue_key: str, client: BacklogClient, issue: dict | None = None
) -> str:
    """Bring automedia's schedule for one issue in line with Backlog; returns what was done.

    `issue`: Backlog's JSON for it when the caller just read it (the scan's issue
    list), saving one GET on the first round.
    """
    for _ in range(CLAIM_ROUNDS):
        state = issue_state(issue) if issue is not None else issue_read(client=client, issue_key=issue_key)
        issue = None  # a second round must read afresh
        if state is None:
            return issue_forget(tenant=tenant, issue_key=issue_key)
        if not state.belongs_to(tenant):  # moved to another project: not this tenant's any more
            return issue_forget(tenant=tenant, issue_key=issue_key, issue_id=state.issue_id)
        task = task_for_issue(tenant=tenant, state=state)
        decision = _decide(task, state, tenant)
        if _claim(task, state):
            return ACTIONS[decision.action](
                tenant=tenant, task=task, state=state, client=client, reason=decision.reason
            )
    raise ConcurrentChange(f"{issue_key}: changed concurrently {CLAIM_ROUNDS} times")


@dataclass(frozen=True)
class Decision:
    action: str
    reason: str = ""


def _decide(task: ContentTask, state: IssueState, tenant: Tenant) -> Decision:
    schedule = DeliverySchedule.objects.filter(task=task).first()
    if schedule is not None and schedule.delivery_owns(timezone.now()):
        # Its own status change must not look like a revert.
        return Decision("none")
    has_schedule = schedule is not None
    if not state.approved:
        return Decision("unschedule" if has_schedule else "none")
    if state.delivered_at:
        return Decision("none" if task.is_approved() else "already_delivered")
    if not (has_schedule and task.is_approved() and task.approved_at):
        return Decision("register")
    if state.fingerprint != task.approval_fingerprint:
        template = str(state.parsed.template or "")
        if template != task.approved_template_ref:
            return Decision(
                "invalidate",
                f"テンプレ参照が変更されました（{task.approved_template_ref} → {template or 'なし'}）",
            )
        return Decision("invalidate", "承認後に本文が変更されました")
    if state.parsed.publish_at != task.approved_publish_at:
        change = (
            f"投稿日時が変更されました（{_fmt(task.approved_publish_at)} → {_fmt(state.parsed.publish_at)}）"
        )
        if tenant.publish_time_policy == Tenant.PublishTimePolicy.RESCHEDULE and state.parsed.ok:
            return Decision("reschedule", change)
        return Decision("invalidate", change)
    return Decision("none")


def _fmt(when: datetime | None) -> str:
    return fmt_jst(when) if when else "なし"


def _claim(task: ContentTask, state: IssueState) -> bool:
    """Write the mirror and move the version on; False if another process got there first."""
    mirror = task_mirror(state)
    claimed = ContentTask.objects.filter(pk=task.pk, version=task.version).update(
        version=F("version") + 1, **mirror
    )
    if claimed:
        # The claimed row holds what was just written: set it here rather than read it back
        # (one SELECT of a wide row per decision; the scan's rescue makes thousands).
        for name, value in mirror.items():
            setattr(task, name, value)
        task.version += 1
    return bool(claimed)


def task_mirror(state: IssueState) -> dict:
    """A task's columns that follow Backlog's issue (written by every decision's claim)."""
    parsed = state.parsed
    return {
        "issue_id": state.issue_id,
        "summary": state.summary[:500],
        "description": state.description,
        "status_id": state.status_id,
        "status_name": state.status_name,
        "channel": parsed.channel or "",
        "publish_at": parsed.publish_at,
        "template_ref": str(parsed.template or ""),
        "parsed": parsed.to_json(),
        "parse_errors": parsed.errors,
        "content_fingerprint": state.fingerprint,
        # Follows Backlog: a manager clears 自動配信実行日時 to allow a resend (seed 000).
        "delivered_at": state.delivered_at,
        "deleted_at": None,
        "last_synced_at": timezone.now(),
    }


def _own_echo(event: BacklogEvent, client: BacklogClient) -> bool:
    """The webhook of a status change automedia made itself (a write-back, a revert)
    whose result the mirror already holds: nothing to decide, so no Backlog read.

    Anything else — another user, a body edit, a status the mirror does not hold —
    goes through the full reconcile."""
    changes = (event.payload.get("content") or {}).get("changes") or []
    user = event.payload.get("createdUser") or {}
    status = next((c.get("new_value") for c in changes if c.get("field") == "status"), None)
    if status is None or any(c.get("field") in ("description", "summary") for c in changes):
        return False
    task = ContentTask.objects.filter(tenant=event.tenant, issue_key=event.issue_key).first()
    if task is None or str(task.status_id) != str(status):
        return False
    try:
        return user.get("id") is not None and user.get("id") == client.myself().get("id")
    except BacklogError:
        return False


def issue_forget(*, tenant: Tenant, issue_key: str, issue_id: int | None = None) -> str:
    tasks = ContentTask.objects.filter(tenant=tenant)
    task = tasks.filter(issue_key=issue_key).first() or (
        tasks.filter(issue_id=issue_id).first() if issue_id is not None else None
    )
    if task is None:
        return "unknown issue deleted"
    removed = schedule_delete(task=task)
    ContentTask.objects.filter(pk=task.pk).update(deleted_at=timezone.now())
    return "deleted; schedule removed" if removed else "deleted"


# -- event handlers (registered with backlog_bridge.events) ------------------------


def _on_changed(event: BacklogEvent, client: BacklogClient) -> str:
    if _own_echo(event, client):
        return "own change, already applied"
    return issue_reconcile(tenant=event.tenant, issue_key=event.issue_key, client=client)


def _on_deleted(event: BacklogEvent, client: BacklogClient) -> str:
    # Believed once Backlog no longer has the issue (the reconcile's read answers 404):
    # an unsigned body alone never drops a schedule.
    return issue_reconcile(tenant=event.tenant, issue_key=event.issue_key, client=client)


def _on_bulk_updated(event: BacklogEvent, client: BacklogClient) -> str:
    tenant, links = event.tenant, (event.payload.get("content") or {}).get("link") or []
    keys = [issue_key_of(tenant, link) for link in links]
    return "; ".join(f"{k}: {issue_reconcile(tenant=tenant, issue_key=k, client=client)}" for k in keys)


def _on_dates_updated(event: BacklogEvent, client: BacklogClient) -> str:
    # A bulk date update may move 投稿日時 (a Date custom field): each issue it names is
    # reconciled, so a changed 投稿日時 invalidates or reschedules as on an issue update.
    if names_many({**event.payload, "type": event.type}):
        return _on_bulk_updated(event, client)
    return issue_reconcile(tenant=event.tenant, issue_key=event.issue_key, client=client)


EVENT_HANDLERS: dict[int, EventHandler] = {
    TYPE_CREATED: _on_changed,
    TYPE_UPDATED: _on_changed,
    TYPE_DELETED: _on_deleted,
    TYPE_BULK_UPDATED: _on_bulk_updated,
    TYPE_DATES_UPDATED: _on_dates_updated,
}


def issues_listed_received(*, tenant: Tenant, client: BacklogClient, issues: list[dict], **kwargs) -> int:
    """The catch-up's first run listed issues the project already has: each is registered as
    its created webhook would register it (the listed JSON saves the first read), so one
    missed before automedia listened still shows, as 期限切れ（未承認） once its 投稿日時 passed.
    One that cannot be registered now is left to the scan (approved) or its next change."""
    registered = 0
    for issue in issues:
        key = issue.get("issueKey")
        if not issue_key_valid(key):
            continue
        try:
            issue_reconcile(tenant=tenant, issue_key=key, client=client, issue=issue)
        except (BacklogError, BacklogConfigError, EventRetry) as exc:
            logger.warning("first catch-up of %s: %s not registered: %s", tenant.slug, key, exc)
            continue
        registered += 1
    return registered

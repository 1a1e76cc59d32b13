"""What the lifecycle does once it has decided (deliveries.approve.lifecycle): schedule, reschedule,
unschedule, invalidate or refuse, each with the Backlog comment that says so."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.statuses import BacklogConfigError, status_id_require, status_name_of
from core import metrics
from core.models import Tenant
from core.quiet_hours import QuietAction, quiet_hours_apply
from core.timeutil import fmt_jst
from deliveries.approve.checks import ApprovalChecks, approval_check, approval_checks_store
from deliveries.issues import IssueState
from deliveries.models import (
    FIELD_DELIVERED_AT,
    STATUS_APPROVED,
    STATUS_DEFAULT_REVERT,
    STATUS_ERROR,
    ContentTask,
    DeliverySchedule,
)
from deliveries.services import (
    approval_record,
    publish_passed,
    schedule_delete,
    schedule_due_at,
    schedule_upsert,
)
from deliveries.signals import approval_refused, task_approved

logger = logging.getLogger(__name__)


def _act_none(**_) -> str:
    return "no change"


def _act_unschedule(*, tenant, task, state, client, reason) -> str:
    if not schedule_delete(task=task):
        return "no change"
    _comment(
        client,
        task,
        f"[automedia] 状態が「{state.status_name}」に変わったため、配信予約を取り消しました。",
    )
    return "schedule deleted"


def _act_register(*, tenant, task, state, client, reason) -> str:
    plan = registration_plan(tenant=tenant, state=state, task=task)
    if plan.refusal:
        if plan.checks is not None:
            approval_checks_store(task=task, checks=plan.checks, now=plan.now)  # the admin shows why
        return _reject(client, task, plan.refusal, plan.refusal_reason)
    schedule = _schedule(task, state, plan.publish_at, DeliverySchedule.Reason.APPROVAL, new_approval=True)
    approval_checks_store(task=task, checks=plan.checks, now=plan.now)
    return registration_announce(client=client, task=task, state=state, due_at=schedule.due_at, plan=plan)


class RefusalReason:
    """What refused an approval (the metric's label, the dashboard's reason)."""

    BODY = "body"  # the issue body: 配信メタ, 投稿日時, テンプレ, 変数
    QUIET_HOURS = "quiet_hours"
    CHECKS = "checks"  # the approval-time checks (LINE validate, quota, platform rules)


@dataclass(frozen=True)
class RegistrationPlan:
    """What registering an approval writes, worked out before anything is written."""

    now: datetime
    publish_at: datetime | None = None  # 投稿日時 after the quiet hours (the schedule's due time)
    checks: ApprovalChecks | None = None
    note: str = ""  # the lines the comment adds (quiet hours, what was checked)
    refusal: str = ""  # set: the approval is refused with this comment instead
    refusal_reason: str = ""  # RefusalReason, with `refusal`


def registration_plan(*, tenant: Tenant, state: IssueState, task: ContentTask | None) -> RegistrationPlan:
    """The body's errors, the quiet hours and the approval-time checks of one registration
    (the checks may call LINE); writes nothing. `task`: the quota forecast leaves its own
    schedule out."""
    parsed = state.parsed
    now = timezone.now()
    if not parsed.ok:
        problems = "\n".join(f"- {e}" for e in parsed.errors)
        refusal = f"課題の内容に問題があるため配信を予約できません。\n{problems}"
        return RegistrationPlan(now, refusal=refusal, refusal_reason=RefusalReason.BODY)
    quiet = quiet_hours_apply(quiet=tenant.quiet_hours_config(), when=parsed.publish_at)
    if quiet.action == QuietAction.REJECT:
        return RegistrationPlan(now, refusal=quiet.verdict.message, refusal_reason=RefusalReason.QUIET_HOURS)
    note = f"\n{quiet.verdict.message}" if quiet.action == QuietAction.DEFER else ""
    due_at = schedule_due_at(publish_at=quiet.due_at, now=now)
    checks = approval_check(tenant=tenant, parsed=parsed, due_at=due_at, now=now, task=task)
    if not checks.ok:
        return RegistrationPlan(
            now, quiet.due_at, checks, refusal=checks.refusal(), refusal_reason=RefusalReason.CHECKS
        )
    if checks.lines:
        note += f"\n確認: {checks.summary()}"
    return RegistrationPlan(now, quiet.due_at, checks, note)


def registration_announce(
    *, client: BacklogClient, task: ContentTask, state: IssueState, due_at: datetime, plan: RegistrationPlan
) -> str:
    """Once the schedule is committed: linepush's group post, then the one "予約しました"
    comment. `task` must hold what the registration wrote (its approval, its body)."""
    # linepush's task_approved post to the task's 連絡グループ (idempotent per approval).
    task_approved.send(sender=ContentTask, task=task)
    what = f"（チャネル: {task.channel_label}、テンプレ: {state.parsed.template}）{plan.note}"
    publish_at = state.parsed.publish_at
    if publish_passed(publish_at=publish_at, due_at=due_at, now=timezone.now()):
        head = f"投稿日時 {fmt_jst(publish_at)} を過ぎているため、今すぐ配信します: {fmt_jst(due_at)}"
    else:
        head = f"配信を予約しました: {fmt_jst(due_at)}"
    _comment(client, task, f"[automedia] {head}{what}")
    return f"scheduled at {due_at.isoformat()}"


def _act_reschedule(*, tenant, task, state, client, reason) -> str:
    quiet = quiet_hours_apply(quiet=tenant.quiet_hours_config(), when=state.parsed.publish_at)
    if quiet.action == QuietAction.REJECT:
        schedule_delete(task=task)
        return _reject(client, task, f"{reason}。{quiet.verdict.message}", RefusalReason.QUIET_HOURS)
    schedule = _schedule(task, state, quiet.due_at, DeliverySchedule.Reason.RESCHEDULE, new_approval=False)
    _comment(
        client,
        task,
        f"[automedia] {reason}。配信予約を {fmt_jst(schedule.due_at)} に更新しました。",
    )
    return f"rescheduled at {schedule.due_at.isoformat()}"


def _act_invalidate(*, tenant, task, state, client, reason) -> str:
    # Backlog first: if the PATCH fails the schedule (and so the decision) survives for the retry.
    status_id = revert_status_id(client=client, project_key=tenant.backlog_project_key)
    comment = f"[automedia] {reason}。承認を取り消し、配信予約を削除しました。内容を確認して、もう一度「{STATUS_APPROVED}」にしてください。"
    client.update_issue(task.issue_key, status_id=status_id, comment=comment)
    schedule_delete(task=task)
    _mirror_status(task, status_id, client, tenant)
    return f"invalidated: {reason}"


def _act_already_delivered(*, tenant, task, state, client, reason) -> str:
    _comment(
        client,
        task,
        f"[automedia] この課題は {fmt_jst(state.delivered_at)} に配信済みのため、再配信しません。再配信するにはカスタム属性「{FIELD_DELIVERED_AT}」を空にしてから承認してください。",
    )
    return "already delivered"


ACTIONS = {
    "none": _act_none,
    "unschedule": _act_unschedule,
    "register": _act_register,
    "reschedule": _act_reschedule,
    "invalidate": _act_invalidate,
    "already_delivered": _act_already_delivered,
}


def _schedule(
    task: ContentTask, state: IssueState, publish_at: datetime, reason: str, *, new_approval: bool
) -> DeliverySchedule:
    now = timezone.now()
    with transaction.atomic():
        schedule = schedule_upsert(
            task=task, due_at=schedule_due_at(publish_at=publish_at, now=now), reason=reason
        )
        if new_approval:
            approval_record(task=task, state=state, now=now)
        else:
            ContentTask.objects.filter(pk=task.pk).update(approved_publish_at=state.parsed.publish_at)
    return schedule


def _reject(client: BacklogClient, task: ContentTask, message: str, reason: str) -> str:
    """Move an approval automedia cannot honour to automediaエラー, saying why."""
    tenant = task.tenant
    status_id = status_id_require(client=client, project_key=tenant.backlog_project_key, name=STATUS_ERROR)
    client.update_issue(task.issue_key, status_id=status_id, comment=f"[automedia] {message}")
    _mirror_status(task, status_id, client, tenant)
    metrics.approval_refused(reason)
    approval_refused.send(sender=ContentTask, task=task, reason=reason, message=message)
    return f"rejected: {message.splitlines()[0]}"


def _mirror_status(task: ContentTask, status_id: int, client: BacklogClient, tenant: Tenant) -> None:
    # Record automedia's own change at once, so the webhook it causes finds nothing to do.
    name = status_name_of(client=client, project_key=tenant.backlog_project_key, status_id=status_id)
    ContentTask.objects.filter(pk=task.pk).update(status_id=status_id, status_name=name)


def _comment(client: BacklogClient, task: ContentTask, text: str) -> None:
    """Informational comment: a failure is logged, never undoes the decision."""
    try:
        client.add_comment(task.issue_key, text)
    except BacklogError as exc:
        logger.warning("comment on %s failed: %s", task.issue_key, exc)


def revert_status_id(*, client: BacklogClient, project_key: str) -> int:
    """Where invalidation sends an issue back (seed 001 precedence).

    NAME set → resolve it, ID is the fallback; only ID set → use it directly;
    neither → resolve 処理中.
    """
    name, fallback = settings.INVALIDATE_REVERT_STATUS_NAME, settings.INVALIDATE_REVERT_STATUS_ID
    if not name and fallback is not None:
        return fallback
    status_id = client.status_id(project_key, name or STATUS_DEFAULT_REVERT)
    if status_id is not None:
        return status_id
    if fallback is not None:
        return fallback
    raise BacklogConfigError(
        f"差し戻し先の状態「{name or STATUS_DEFAULT_REVERT}」がプロジェクト {project_key} にありません"
        "（INVALIDATE_REVERT_STATUS_NAME / INVALIDATE_REVERT_STATUS_ID で指定できます）"
    )

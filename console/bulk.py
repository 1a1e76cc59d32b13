"""Bulk 再試行 and 予約を取り消す over the task list's selection, behind a confirmation page.

The page lists what will happen to each selected task, with the same checks as the single
actions (the user's role in its tenant, the task's state); nothing is done until the
manager confirms. The selection comes from the admin's tenant-scoped queryset, so another
tenant's task is never among it, and on confirmation each task goes through the single
action's service (`console.actions.bulk_action`), which checks again.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from console.actions import bulk_action
from console.services import task_cancel, task_retry
from core.access import may_act
from core.timeutil import fmt_jst
from deliveries.models import STATUS_APPROVED, STATUS_ERROR, ContentTask, DeliverySchedule

RETRY, CANCEL = "retry_selected", "cancel_selected"


@dataclass(frozen=True)
class Step:
    task: ContentTask
    ok: bool
    text: str  # what will happen, or why nothing will


def _retry_step(task: ContentTask, schedule: DeliverySchedule | None) -> Step:
    if task.status_name != STATUS_ERROR:
        return Step(
            task, False, _("対象外: 「%(status)s」の課題だけ再試行できます") % {"status": STATUS_ERROR}
        )
    if task.deleted_at is not None or task.delivered_at is not None or schedule is not None:
        return Step(task, False, _("対象外: 削除済み、配信済み、または予約済みです"))
    return Step(
        task,
        True,
        _("Backlog の状態を「%(status)s」にして承認し直し、%(when)s に配信を予約します")
        % {"status": STATUS_APPROVED, "when": _due_text(task)},
    )


def _cancel_step(task: ContentTask, schedule: DeliverySchedule | None) -> Step:
    if schedule is None:
        return Step(task, False, _("対象外: 配信予約がありません"))
    if schedule.stage != DeliverySchedule.Stage.DELIVER:
        return Step(task, False, _("対象外: 配信が終わり、Backlog への書き戻しを待っています"))
    return Step(
        task,
        True,
        _("%(when)s の配信予約を削除し、Backlog の状態を戻します") % {"when": fmt_jst(schedule.due_at)},
    )


def _due_text(task: ContentTask) -> str:
    return fmt_jst(task.publish_at) if task.publish_at else _("今すぐ")


PLANS = {RETRY: _retry_step, CANCEL: _cancel_step}
SERVICES = {
    RETRY: lambda task, user: task_retry(task=task, user=user),
    CANCEL: lambda task, user: task_cancel(task=task, user=user),
}


def bulk_steps(*, action: str, tasks: QuerySet, user) -> list[Step]:
    schedules = {s.task_id: s for s in DeliverySchedule.objects.filter(task__in=tasks)}
    steps = []
    for task in tasks.select_related("tenant"):
        if not may_act(user, task.tenant_id):
            steps.append(Step(task, False, _("対象外: 閲覧のみの権限です")))
        else:
            steps.append(PLANS[action](task, schedules.get(task.pk)))
    return steps


def bulk_confirm(
    model_admin, request: HttpRequest, queryset: QuerySet, *, action: str, title: str, done: str
):
    """The confirmation page on the action's first POST; the actions themselves once confirmed."""
    if request.POST.get("confirm") == "yes":
        bulk_action(model_admin, request, queryset, SERVICES[action], done_text=done)
        return None
    steps = bulk_steps(action=action, tasks=queryset, user=request.user)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": title,
        "action": action,
        "steps": steps,
        "doable": sum(step.ok for step in steps),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/deliveries/contenttask/bulk_confirm.html", context)

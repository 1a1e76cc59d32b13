"""Bulk actions behind a confirmation page: 再試行 and 予約を取り消す over tasks, 再実行 and
取り消す over failed LINE group posts.

The page lists what will happen to each selected object, with the same checks as the
single actions (the user's role in its tenant, the object's state); nothing is done until
the manager confirms. The selection comes from the admin's tenant-scoped queryset, so
another tenant's object is never among it, and on confirmation each object goes through
the single action's service (`console.actions.bulk_action`), which checks again. The
dashboard's 要対応 rows post one object to the same page, with `next` to come back to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from console.actions import bulk_action
from console.services import push_item_dismiss, push_item_retry, task_cancel, task_retry
from core.access import may_act
from core.timeutil import fmt_jst
from deliveries.models import STATUS_APPROVED, STATUS_ERROR, ContentTask, DeliverySchedule
from linepush.models import LinePushItem

RETRY, CANCEL = "retry_selected", "cancel_selected"
PUSH_RETRY, PUSH_DISMISS = "retry", "dismiss"


@dataclass(frozen=True)
class Step:
    obj: Model
    ok: bool
    text: str  # what will happen, or why nothing will

    @property
    def name(self) -> str:
        if isinstance(self.obj, ContentTask):
            return f"{self.obj.issue_key} {self.obj.summary[:40]}"
        return str(self.obj)

    @property
    def state(self) -> str:
        if isinstance(self.obj, ContentTask):
            return self.obj.status_name or "-"
        return str(self.obj.get_status_display())


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
        _("Backlog の状態を「%(status)s」にして承認し直し、%(due)s")
        % {"status": STATUS_APPROVED, "due": _due_text(task)},
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
    if task.publish_at is None:
        return _("今すぐ配信します")
    if task.publish_at <= timezone.now():  # deliveries.services.schedule_due_at: sent at once
        return _("投稿日時 %(when)s を過ぎているため、今すぐ配信します") % {"when": fmt_jst(task.publish_at)}
    return _("%(when)s に配信を予約します") % {"when": fmt_jst(task.publish_at)}


def _push_retry_step(item: LinePushItem, _schedule: None) -> Step:
    if item.status != LinePushItem.Status.FAILED:
        return Step(item, False, _("対象外: 失敗した投稿だけ再実行できます"))
    return Step(item, True, _("送信待ちに戻し、もう一度 LINE に送信します"))


def _push_dismiss_step(item: LinePushItem, _schedule: None) -> Step:
    if item.status != LinePushItem.Status.FAILED:
        return Step(item, False, _("対象外: 失敗した投稿だけ取り消せます"))
    return Step(item, True, _("送信せずに終えます（要対応から外れます）"))


PLANS: dict[str, Callable[[Model, DeliverySchedule | None], Step]] = {
    RETRY: _retry_step,
    CANCEL: _cancel_step,
    PUSH_RETRY: _push_retry_step,
    PUSH_DISMISS: _push_dismiss_step,
}
SERVICES = {
    RETRY: lambda task, user: task_retry(task=task, user=user),
    CANCEL: lambda task, user: task_cancel(task=task, user=user),
    PUSH_RETRY: lambda item, user: push_item_retry(item=item, user=user),
    PUSH_DISMISS: lambda item, user: push_item_dismiss(item=item, user=user),
}


def bulk_steps(*, action: str, objs: QuerySet, user) -> list[Step]:
    schedules = {}
    if objs.model is ContentTask:
        schedules = {s.task_id: s for s in DeliverySchedule.objects.filter(task__in=objs)}
    steps = []
    for obj in objs.select_related("tenant"):
        if not may_act(user, obj.tenant_id):
            steps.append(Step(obj, False, _("対象外: 閲覧のみの権限です")))
        else:
            steps.append(PLANS[action](obj, schedules.get(obj.pk)))
    return steps


def bulk_confirm(
    model_admin, request: HttpRequest, queryset: QuerySet, *, action: str, title: str, done: str
):
    """The confirmation page on the action's first POST; the actions themselves once confirmed."""
    back = _next(request)
    if request.POST.get("confirm") == "yes":
        bulk_action(model_admin, request, queryset, SERVICES[action], done_text=done)
        return HttpResponseRedirect(back) if back else None
    steps = bulk_steps(action=action, objs=queryset, user=request.user)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": title,
        "action": action,
        "steps": steps,
        "doable": sum(step.ok for step in steps),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "next": back,
    }
    return TemplateResponse(request, "admin/console/bulk_confirm.html", context)


def _next(request: HttpRequest) -> str:
    """Where a row's action came from (the dashboard), if it is this site."""
    back = request.POST.get("next", "")
    allowed = url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure())
    return back if back and allowed else ""


def confirm_action(action: str, *, description: str, title: str, done: str):
    """An admin action (a ModelAdmin attribute) that goes through the confirmation page."""

    @admin.action(description=description)
    def run(model_admin, request: HttpRequest, queryset: QuerySet):
        return bulk_confirm(model_admin, request, queryset, action=action, title=title, done=done)

    return run

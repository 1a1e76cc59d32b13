"""What a manager does in the admin, through the same services as Backlog and the comment commands.

- approve / retry: move the Backlog status to `automedia承認` through the API, then
  register at once with `issue_reconcile` (the decision a webhook would take; the
  webhook of our own change later finds nothing to do);
- cancel: `/automedia cancel` (delete the schedule, move the status back);
- correct (訂正を送る): `/automedia correct` with the form's text (deliveries.channels.corrections);
- LINE group posts: approve / reject / retry with linepush's services.

Each action is recorded with who and when (`console.audit`); Backlog gets a comment
naming the manager, so people reading the issue see who acted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.statuses import BacklogConfigError, status_id_require
from console.audit import action_record
from console.results import result_label
from core.timeutil import fmt_jst
from deliveries.approve.lifecycle import ConcurrentChange, issue_reconcile
from deliveries.approve.preview import preview_build
from deliveries.channels.corrections import correction_send
from deliveries.channels.preview_base import Preview
from deliveries.comment_commands.run import OWN_PREFIX, schedule_cancel
from deliveries.issues import issue_read
from deliveries.models import STATUS_APPROVED, STATUS_ERROR, ContentTask, DeliverySchedule
from deliveries.services import publish_passed
from linepush.models import LineApiToken, LinePushItem
from linepush.services import push_approve, push_dismiss, push_reject, push_resume, push_retry

APPROVE = gettext_noop("承認")
RETRY = gettext_noop("再実行（再承認）")

# Expected failures of an action: shown to the person, never a 500.
ACTION_ERRORS = (BacklogError, BacklogConfigError, ConcurrentChange)


@dataclass(frozen=True)
class ActionResult:
    ok: bool
    message: str


class IssueMissing(Exception):
    """Backlog no longer has the issue."""


# -- content tasks ------------------------------------------------------------------------


def task_approve(*, task: ContentTask, user) -> ActionResult:
    problem = _approve_problem(task)
    if problem:
        return ActionResult(False, problem)
    return _approve(task, user, verb=APPROVE)


def task_retry(*, task: ContentTask, user) -> ActionResult:
    """Re-approval of a task in automediaエラー (seed 001: only a person runs it again)."""
    if task.status_name != STATUS_ERROR:
        return ActionResult(False, _("「%(status)s」の課題だけ再実行できます。") % {"status": STATUS_ERROR})
    problem = _approve_problem(task)
    if problem:
        return ActionResult(False, problem)
    return _approve(task, user, verb=RETRY)


def _approve_problem(task: ContentTask) -> str:
    if task.deleted_at is not None:
        return _("Backlog で削除された課題です。")
    if task.delivered_at is not None:
        return _(
            "%(when)s に配信済みです（再配信するには Backlog で自動配信実行日時を空にしてください）。"
        ) % {"when": fmt_jst(task.delivered_at)}
    if DeliverySchedule.objects.filter(task=task).exists():
        return _("すでに配信が予約されています。")
    return ""


def _approve(task: ContentTask, user, *, verb: str) -> ActionResult:
    tenant, started = task.tenant, timezone.now()
    with BacklogClient.for_tenant(tenant) as backlog:
        status_id = status_id_require(
            client=backlog, project_key=tenant.backlog_project_key, name=STATUS_APPROVED
        )
        comment = f"{OWN_PREFIX} 管理画面で {user.get_username()} さんが{verb}しました。"
        backlog.update_issue(task.issue_key, status_id=status_id, comment=comment)
        outcome = issue_reconcile(tenant=tenant, issue_key=task.issue_key, client=backlog)
    schedule = DeliverySchedule.objects.filter(task=task).first()
    task.refresh_from_db()
    if schedule is None:
        with translation.override("ja"):  # the log is written in Japanese, as every action's
            outcome = result_label(outcome)
        action_record(user=user, obj=task, message=f"{verb}: 予約されませんでした（{outcome}）")
        return ActionResult(False, _not_scheduled(task, since=started))
    if publish_passed(publish_at=task.publish_at, due_at=schedule.due_at, now=timezone.now()):
        action_record(user=user, obj=task, message=f"{verb}: 投稿日時を過ぎているため今すぐ配信")
        return ActionResult(
            True,
            _(
                "%(key)s を%(verb)sしました。投稿日時 %(publish_at)s を過ぎているため、今すぐ（%(due)s）配信します。"
            )
            % {
                "key": task.issue_key,
                "verb": _(verb),
                "publish_at": fmt_jst(task.publish_at),
                "due": fmt_jst(schedule.due_at),
            },
        )
    action_record(user=user, obj=task, message=f"{verb}: {fmt_jst(schedule.due_at)} に配信予約")
    return ActionResult(
        True,
        _("%(key)s を%(verb)sし、%(due)s に配信を予約しました。")
        % {"key": task.issue_key, "verb": _(verb), "due": fmt_jst(schedule.due_at)},
    )


def _not_scheduled(task: ContentTask, *, since: datetime) -> str:
    text = _("予約されませんでした（Backlog の状態: %(status)s）。") % {"status": task.status_name}
    checks = task.approval_checks or {}
    checked = checks.get("checked_at")
    refused = checks.get("problems") or [] if checked and datetime.fromisoformat(checked) >= since else []
    problems = "".join(f" {p}" for p in [*task.parse_errors, *refused])
    return text + problems + _(" 詳しくは Backlog のコメントを確認してください。")


def task_cancel(*, task: ContentTask, user) -> ActionResult:
    """Delete the schedule and move the status back (as `/automedia cancel`)."""
    schedule = DeliverySchedule.objects.filter(task=task).first()
    if schedule is None:
        return ActionResult(False, _("取り消す配信予約はありません。"))
    with BacklogClient.for_tenant(task.tenant) as backlog:
        text = schedule_cancel(tenant=task.tenant, issue_key=task.issue_key, client=backlog)
        if DeliverySchedule.objects.filter(pk=schedule.pk).exists():
            return ActionResult(False, text.removeprefix(OWN_PREFIX).strip())
        _comment(backlog, task.issue_key, f"{text}（管理画面: {user.get_username()} さん）")
    task.refresh_from_db()
    action_record(
        user=user,
        obj=task,
        message=f"予約取消: {fmt_jst(schedule.due_at)} の予約を削除し「{task.status_name}」に戻す",
    )
    return ActionResult(
        True,
        _("%(key)s の配信予約（%(due)s）を取り消し、状態を「%(status)s」に戻しました。")
        % {"key": task.issue_key, "due": fmt_jst(schedule.due_at), "status": task.status_name},
    )


def task_correct(*, task: ContentTask, user, text: str) -> ActionResult:
    """A correction of the delivered LINE message; Backlog gets a comment saying it was sent
    (the status stays automedia実行済み)."""
    name = user.get_username()
    result = correction_send(task=task, text=text, by=f"{name}（管理画面）")
    if not result.sent:
        return ActionResult(False, result.message)
    quoted = "\n".join(f"> {line}" for line in text.strip().splitlines())
    with BacklogClient.for_tenant(task.tenant) as backlog:
        _comment(
            backlog,
            task.issue_key,
            f"{OWN_PREFIX} 管理画面で {name} さんが{result.message}\n\n訂正文:\n{quoted}",
        )
    action_record(user=user, obj=task, message=f"訂正を送信: {result.message.splitlines()[0]}")
    return ActionResult(True, result.message)


def _comment(backlog: BacklogClient, issue_key: str, text: str) -> None:
    try:
        backlog.add_comment(issue_key, text)
    except BacklogError:
        pass  # informational: the cancellation itself stands


def task_preview(*, task: ContentTask) -> Preview:
    """What the task will send, read from Backlog now (as `/automedia preview`, without AI review)."""
    with BacklogClient.for_tenant(task.tenant) as backlog:
        state = issue_read(client=backlog, issue_key=task.issue_key)
    if state is None:
        raise IssueMissing(task.issue_key)
    schedule = DeliverySchedule.objects.filter(task=task).first()
    command = schedule is not None and schedule.reason == DeliverySchedule.Reason.COMMAND
    return preview_build(
        tenant=task.tenant,
        issue_key=task.issue_key,
        state=state,
        now=timezone.now(),
        override=task.command_override if command else None,
        review=False,
    )


# -- LINE group posts ---------------------------------------------------------------------


def push_item_approve(*, item: LinePushItem, user) -> ActionResult:
    if not push_approve(item=item, user=user):
        return ActionResult(False, _("%(item)sは承認待ちではありません。") % {"item": item})
    action_record(user=user, obj=item, message="LINE 投稿を承認")
    return ActionResult(True, _("%(item)sを承認しました。送信待ちに入ります。") % {"item": item})


def push_item_reject(*, item: LinePushItem, user) -> ActionResult:
    if not push_reject(item=item, user=user):
        return ActionResult(False, _("%(item)sは承認待ちではありません。") % {"item": item})
    action_record(user=user, obj=item, message="LINE 投稿を却下")
    return ActionResult(True, _("%(item)sを却下しました。送信されません。") % {"item": item})


def push_item_retry(*, item: LinePushItem, user) -> ActionResult:
    if not push_retry(item=item):
        return ActionResult(False, _("%(item)sは失敗した投稿ではありません。") % {"item": item})
    action_record(user=user, obj=item, message="LINE 投稿を再実行")
    return ActionResult(True, _("%(item)sを送信待ちに戻しました。") % {"item": item})


def push_item_dismiss(*, item: LinePushItem, user) -> ActionResult:
    if not push_dismiss(item=item, user=user):
        return ActionResult(False, _("%(item)s は失敗した投稿ではありません。") % {"item": item})
    action_record(user=user, obj=item, message="失敗した LINE 投稿を取り消し")
    return ActionResult(True, _("%(item)s を取り消しました。送信されません。") % {"item": item})


def push_item_resume(*, item: LinePushItem, user) -> ActionResult:
    if not push_resume(item=item):
        return ActionResult(False, _("%(item)sは保留中ではありません。") % {"item": item})
    action_record(user=user, obj=item, message="保留中の LINE 投稿を再開")
    return ActionResult(True, _("%(item)sを送信待ちに戻しました。") % {"item": item})


def api_token_revoke(*, token: LineApiToken, user) -> ActionResult:
    if not token.revoke():
        return ActionResult(False, _("%(token)s は無効化済みです。") % {"token": token})
    action_record(user=user, obj=token, message="LINE 投稿 API トークンを無効化")
    return ActionResult(True, _("%(token)s を無効化しました。") % {"token": token})

"""テスト配信: a task's (or a group post's) message, rendered as it will go out, sent to the
tenant's test recipients (the managers' own LINE accounts), marked as a test.

A test send is not the delivery: the task, its schedule and its attempts stay as they are,
nothing is written back to Backlog, and the dashboard counts nothing. It is recorded in
the object's 操作履歴 only.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from console.audit import action_record
from console.models import LineTestRecipient
from console.services import ACTION_ERRORS, ActionResult, IssueMissing, task_preview
from core.models import Tenant
from core.transport import TransportError
from deliveries.models import ContentTask
from line.direct import direct_push, marked_as_test
from linepush.models import LinePushItem


def task_test_send(*, task: ContentTask, user) -> ActionResult:
    try:
        preview = task_preview(task=task)
    except IssueMissing:
        return ActionResult(False, _("Backlog にこの課題がありません（削除された可能性があります）。"))
    except ACTION_ERRORS as exc:
        return ActionResult(False, _("Backlog から課題を読めませんでした: %(error)s") % {"error": exc})
    if not preview.messages:
        problems = " ".join(preview.problems) or _("メッセージを作れませんでした。")
        return ActionResult(False, _("テスト配信できません: %(problems)s") % {"problems": problems})
    note = _("%(key)s %(summary)s（本番の配信ではありません）") % {
        "key": task.issue_key,
        "summary": task.summary,
    }
    return _send(task.tenant, marked_as_test(preview.messages, note=note), obj=task, user=user)


def push_item_test_send(*, item: LinePushItem, user) -> ActionResult:
    if not isinstance(item.payload, list) or not item.payload:
        return ActionResult(False, _("テスト配信できません: 送るメッセージがありません。"))
    note = _("%(trigger)s の投稿（グループには送っていません）") % {
        "trigger": item.get_trigger_type_display()
    }
    return _send(item.tenant, marked_as_test(item.payload, note=note), obj=item, user=user)


def _send(tenant: Tenant, messages: list[dict], *, obj, user) -> ActionResult:
    recipients = list(LineTestRecipient.objects.filter(tenant=tenant, active=True).order_by("pk"))
    if not recipients:
        return ActionResult(
            False,
            _(
                "テスト配信の宛先がありません。「テスト配信の宛先」に自分の LINE ユーザーIDを登録してください。"
            ),
        )
    sent, failed = [], []
    for recipient in recipients:
        try:
            direct_push(tenant=tenant, to=recipient.user_id, messages=messages)
        except TransportError as exc:
            failed.append(f"{recipient.name}: {exc.message}")
        else:
            sent.append(recipient.name)
    action_record(user=user, obj=obj, message=f"テスト配信: {'、'.join(sent) or 'なし'} に送信")
    if failed:
        return ActionResult(False, _("テスト配信に失敗しました: %(failed)s") % {"failed": " / ".join(failed)})
    return ActionResult(
        True,
        _("テスト配信を %(names)s に送りました（配信としては数えず、Backlog にも書き戻しません）。")
        % {"names": "、".join(sent)},
    )

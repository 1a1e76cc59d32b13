"""A content task's state in one sentence for its preview: sent at …, scheduled for …,
refused because …, failed because …, missed, or what approving it would do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils.translation import gettext as _

from console.models import DeliveryOutcome
from core.timeutil import fmt_jst
from deliveries.models import STATUS_ERROR, ContentTask, DeliveryAttempt, DeliverySchedule

DELIVERED, SCHEDULED, WRITEBACK, REFUSED, FAILED = "delivered", "scheduled", "writeback", "refused", "failed"
DELETED, MISSED, OPEN, UNDATED = "deleted", "missed", "open", "undated"


@dataclass(frozen=True)
class TaskState:
    key: str
    text: str


def task_state(*, task: ContentTask, now: datetime, due_at: datetime | None) -> TaskState:
    """`due_at`: when approving it now would send it (the preview's reckoning)."""
    schedule = DeliverySchedule.objects.filter(task=task).first()
    if task.delivered_at is not None:
        return TaskState(
            DELIVERED, _("配信済み: %(when)s に送信しました") % {"when": fmt_jst(task.delivered_at)}
        )
    if schedule is not None:
        if schedule.stage == DeliverySchedule.Stage.WRITEBACK:
            return TaskState(WRITEBACK, _("配信を終え、Backlog への書き戻しを待っています"))
        return TaskState(SCHEDULED, _("予約済み: %(when)s に配信します") % {"when": fmt_jst(schedule.due_at)})
    if task.deleted_at is not None:
        return TaskState(DELETED, _("Backlog で削除された課題です"))
    if task.status_name == STATUS_ERROR:
        return _error_state(task)
    if due_at is None:
        return TaskState(UNDATED, _("未定（投稿日時がありません）"))
    if task.publish_at is not None and task.publish_at < now:
        return TaskState(
            MISSED,
            _("期限切れ: 投稿日時 %(when)s を過ぎても承認されていません（承認すると今すぐ配信します）")
            % {"when": fmt_jst(task.publish_at)},
        )
    return TaskState(OPEN, _("%(when)s（承認すると予約されます）") % {"when": fmt_jst(due_at)})


def _error_state(task: ContentTask) -> TaskState:
    outcome = DeliveryOutcome.objects.filter(task=task).order_by("-created_at", "-id").first()
    if outcome is not None and outcome.kind == DeliveryOutcome.Kind.REFUSED:
        return TaskState(REFUSED, _("承認不可: %(reason)s") % {"reason": outcome.detail or "-"})
    attempt = (
        DeliveryAttempt.objects.filter(task=task).exclude(error="").order_by("-created_at", "-id").first()
    )
    reason = attempt.error if attempt else " / ".join(task.parse_errors) or "-"
    return TaskState(FAILED, _("配信失敗: %(reason)s") % {"reason": reason})

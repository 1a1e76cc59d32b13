"""What the calendar draws: every delivery and LINE group post of a period, with its state.

Each kind of row is read in one query, whatever the number of rows:
- 予約済み: a delivery's schedule (due time) and a group post that is pending or held;
- 送信済み / 失敗: how past deliveries ended (`console.outcomes`: recorded outcomes, or
  the attempts, 自動配信実行日時 and status they left), a write-back still pending
  after a failure, an approval refused before any request (an `automediaエラー` task
  without an attempt of its approval: shown at its 投稿日時), and sent or failed posts;
- 承認待ち: a content task with a channel and a future 投稿日時 that is not approved,
  and a group post waiting for a manager;
- 期限切れ: such a task whose 投稿日時 passed without an approval (nothing went out).
A skipped delivery or post went nowhere and is not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.urls import reverse

from console.models import DeliveryOutcome
from console.outcomes import delivery_endings
from core.access import scope
from deliveries.models import (
    STATUS_ERROR,
    ContentTask,
    DeliveryAttempt,
    DeliverySchedule,
    unapproved_q,
)
from line.models import LineSource, Trigger
from linepush.models import LinePushItem

SCHEDULED, SENT, FAILED, WAITING, MISSED = "scheduled", "sent", "failed", "waiting", "missed"
GROUP_POST = "line_group"  # the channel key of a LINE group post
PUSH_STATES = {
    LinePushItem.Status.WAITING_APPROVAL: WAITING,
    LinePushItem.Status.PENDING: SCHEDULED,
    LinePushItem.Status.HELD: SCHEDULED,
    LinePushItem.Status.SENT: SENT,
    LinePushItem.Status.FAILED: FAILED,
}
TASK_FIELDS = ("tenant_id", "issue_key", "summary", "channel")


@dataclass(frozen=True)
class Entry:
    at: datetime
    channel: str  # a delivery channel (core/channels.py) or GROUP_POST
    state: str  # SCHEDULED, SENT, FAILED, WAITING or MISSED
    tenant_id: int
    title: str  # the issue key, or the group's name
    detail: str  # the summary, or the post's trigger and first text
    url: str  # the admin page of the task or the post

    @property
    def sort_key(self) -> tuple:
        return (self.at, self.title)


@dataclass(frozen=True)
class Window:
    """The period drawn, [start, end), limited to one tenant when `tenant_id` is set."""

    start: datetime
    end: datetime
    now: datetime
    tenant_id: int | None = None

    def of(self, queryset: QuerySet, path: str = "tenant") -> QuerySet:
        return queryset if self.tenant_id is None else queryset.filter(**{f"{path}_id": self.tenant_id})

    def holds(self, at: datetime | None) -> bool:
        return at is not None and self.start <= at < self.end


def calendar_entries(*, user, window: Window) -> list[Entry]:
    entries = [
        *_schedules(user, window),
        *_endings(user, window),
        *_refused(user, window),
        *_waiting(user, window),
        *_pushes(user, window),
    ]
    return sorted(entries, key=lambda e: e.sort_key)


def _task_entry(task: ContentTask, at: datetime, state: str) -> Entry:
    url = reverse("admin:deliveries_contenttask_change", args=[task.pk])
    return Entry(at, task.channel, state, task.tenant_id, task.issue_key, task.summary, url)


def _schedules(user, window: Window) -> list[Entry]:
    """Deliveries due in the period, and failures whose write-back to Backlog is still pending."""
    due = Q(stage=DeliverySchedule.Stage.DELIVER, due_at__gte=window.start, due_at__lt=window.end)
    failed = Q(stage=DeliverySchedule.Stage.WRITEBACK, outcome__ok=False)
    failed &= Q(updated_at__gte=window.start, updated_at__lt=window.end)
    rows = window.of(scope(DeliverySchedule.objects.filter(due | failed), user)).select_related("task")
    return [
        _task_entry(s.task, s.due_at, SCHEDULED)
        if s.stage == DeliverySchedule.Stage.DELIVER
        else _task_entry(s.task, s.updated_at, FAILED)
        for s in rows.only("stage", "due_at", "updated_at", *(f"task__{f}" for f in TASK_FIELDS))
    ]


def _endings(user, window: Window) -> list[Entry]:
    endings = [
        e
        for e in delivery_endings(user=user, since=window.start, until=window.end)
        if e.kind in (SENT, FAILED)
    ]
    tasks = window.of(ContentTask.objects.only(*TASK_FIELDS)).in_bulk({e.task_id for e in endings})
    return [_task_entry(tasks[e.task_id], e.at, e.kind) for e in endings if e.task_id in tasks]


def _refused(user, window: Window) -> list[Entry]:
    """Approvals refused before any request (content, quiet hours): the slot failed.

    A run that failed before its first request (a render error) is a recorded ending instead.
    """
    this_approval = DeliveryAttempt.objects.filter(task=OuterRef("pk"), approval_seq=OuterRef("approval_seq"))
    recorded = DeliveryOutcome.objects.filter(
        task=OuterRef("pk"), kind=DeliveryOutcome.Kind.FAILED, created_at__gte=OuterRef("approved_at")
    )
    tasks = ContentTask.objects.filter(
        status_name=STATUS_ERROR,
        publish_at__gte=window.start,
        publish_at__lt=window.end,
        schedule__isnull=True,
        deleted_at__isnull=True,
    ).exclude(Exists(this_approval) | Exists(recorded))
    return [
        _task_entry(t, t.publish_at, FAILED)
        for t in window.of(scope(tasks, user)).only(*TASK_FIELDS, "publish_at")
    ]


def _waiting(user, window: Window) -> list[Entry]:
    """Tasks that will go out once approved (a 投稿日時 still ahead), and those missed (passed)."""
    tasks = ContentTask.objects.filter(
        unapproved_q(), publish_at__gte=window.start, publish_at__lt=window.end
    )
    return [
        _task_entry(t, t.publish_at, WAITING if t.publish_at >= window.now else MISSED)
        for t in window.of(scope(tasks, user)).only(*TASK_FIELDS, "publish_at")
    ]


def _pushes(user, window: Window) -> list[Entry]:
    names = LineSource.objects.filter(tenant=OuterRef("tenant"), group_id=OuterRef("ext_group_id"))
    in_period = Q(scheduled_at__gte=window.start, scheduled_at__lt=window.end)
    in_period |= Q(sent_at__gte=window.start, sent_at__lt=window.end)
    items = (
        window.of(scope(LinePushItem.objects.filter(in_period, status__in=PUSH_STATES), user))
        .annotate(group_name=Subquery(names.values("name")[:1]))
        .only("tenant_id", "ext_group_id", "trigger_type", "payload", "status", "scheduled_at", "sent_at")
    )
    entries = (_push_entry(item) for item in items)
    return [e for e in entries if window.holds(e.at)]


def _push_entry(item: LinePushItem) -> Entry:
    at = item.sent_at if item.status == LinePushItem.Status.SENT and item.sent_at else item.scheduled_at
    trigger = Trigger(item.trigger_type).label if item.trigger_type in Trigger.values else item.trigger_type
    detail = " ".join(filter(None, [str(trigger), _first_text(item.payload)]))
    url = reverse("admin:linepush_linepushitem_change", args=[item.pk])
    title = item.group_name or item.ext_group_id
    return Entry(at, GROUP_POST, PUSH_STATES[item.status], item.tenant_id, title, detail, url)


def _first_text(payload) -> str:
    texts = [m.get("text", "") for m in payload or [] if isinstance(m, dict) and m.get("type") == "text"]
    return texts[0][:80] if texts else ""

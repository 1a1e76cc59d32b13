"""Producers of group posts: task approved, reminders, escalations, morning digest.

A task names its LINE group with `- 連絡グループ: <groupId>` in `## 配信メタ`. Each post has a
dedupe key, so a job run twice (django-q2 is at-least-once) posts nothing twice; a post that
cannot be queued is kept as a `LinePushProblem` of its source until a later run queues it.

    trigger         when                                        dedupe key, after `trigger:`
    task_approved   an approval is registered                   {tenant}:{issue}:{approval}
    reminder        hourly: approved tasks due within 24 h      {tenant}:{issue}:{date}
    escalation      daily: errors left too long, overdue tasks  {tenant}:{issue}:{date}
    escalation      a delivery failed, a token expired          failure:{tenant}:{issue}:{approval}:{kind}
    morning_digest  hourly: a group's day, queued for 08:00     {tenant}:{group}:{date}
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from functools import partial
from typing import TypeVar

from django.conf import settings
from django.db import transaction

from core.channels import DEFAULT_CHANNEL, channel_label
from core.models import Tenant
from deliveries.models import STATUS_APPROVED, STATUS_DELIVERED, STATUS_ERROR, ContentTask
from line.models import LineSource, Trigger
from line.services import push_settings
from linepush.models import LinePushItem
from linepush.services import (
    PushInvalid,
    PushSource,
    push_enqueue,
    push_problem_clear,
    push_problem_record,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")

WEEKDAYS = "月火水木金土日"
OVERDUE_GRACE = timedelta(hours=1)
DIGEST_CATCH_UP_HOURS = 4  # a digest missed at 08:00 (workers down) still goes out until 12:00
SOURCE_TABLE = "content_task"
DIGEST_SOURCE_TABLE = "line_source"


def _group_of(task: ContentTask) -> str:
    return (task.parsed or {}).get("contact_group") or ""


def _when(moment: datetime, zone) -> str:
    local = moment.astimezone(zone)
    return f"{local.month}月{local.day}日({WEEKDAYS[local.weekday()]}) {local:%H:%M}"


def _day_word(moment: datetime, now: datetime, zone) -> str:
    days = (moment.astimezone(zone).date() - now.astimezone(zone).date()).days
    return {0: "本日", 1: "明日"}.get(days, _when(moment, zone).split(" ")[0])


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def _enqueue(task: ContentTask, trigger: str, key: str, text: str, origin: str) -> tuple[LinePushItem, bool]:
    return push_enqueue(
        origin=origin,
        tenant=task.tenant,
        ext_group_id=_group_of(task),
        trigger_type=trigger,
        payload=_text(text),
        dedupe_key=key,
        source_table=SOURCE_TABLE,
        source_id=task.issue_key,
    )


def _linked(tasks) -> list[ContentTask]:
    return [t for t in tasks.select_related("tenant") if _group_of(t)]


def _of_task(task: ContentTask, trigger: str) -> PushSource:
    return PushSource(task.tenant, trigger, SOURCE_TABLE, task.issue_key)


def _produce(source: PushSource, make: Callable[[], T]) -> T | None:
    """One post of a batch: any problem is recorded on its source, never raised.

    The savepoint keeps a failed insert from breaking the caller's transaction (the
    Backlog webhook's approval runs in one).
    """
    try:
        with transaction.atomic():
            made = make()
    except PushInvalid as exc:
        logger.warning("line post of %s not queued: %s", source, exc)
        push_problem_record(source=source, error=str(exc))
        return None
    except Exception:  # a loop boundary: the other posts go on
        logger.exception("line post of %s not queued", source)
        push_problem_record(
            source=source, error="内部エラーのため投稿を作成できませんでした（詳細はサーバーのログ）。"
        )
        return None
    push_problem_clear(source=source)
    return made


# -- task_approved ---------------------------------------------------------------------------


def task_approved_received(sender, *, task: ContentTask, **kwargs) -> None:
    """deliveries.signals.task_approved: an approval was registered.

    The sender's `task` holds the body it just registered: a body naming no 連絡グループ
    has no post, and the task is not read again (the scan's rescues send thousands)."""
    if _group_of(task):
        task_approved_enqueue(task=task)


def task_approved_enqueue(*, task: ContentTask) -> LinePushItem | None:
    """Called when an approval is registered; None when the task names no LINE group."""
    task = ContentTask.objects.select_related("tenant").get(pk=task.pk)
    if not _group_of(task):
        return None
    return _produce(_of_task(task, Trigger.TASK_APPROVED), partial(_task_approved_one, task))


def _task_approved_one(task: ContentTask) -> LinePushItem:
    zone = push_settings(tenant=task.tenant).zone
    when = _when(task.publish_at, zone) if task.publish_at else "未定"
    text = f"【タスク承認】「{task.summary}」を承りました。\n投稿予定: {when}\n（{task.issue_key}）"
    key = f"task_approved:{task.tenant.slug}:{task.issue_key}:{task.approval_seq}"
    return _enqueue(task, Trigger.TASK_APPROVED, key, text, "task_approved")[0]


# -- reminder ----------------------------------------------------------------------------------


def reminders_produce(*, now: datetime) -> int:
    """Hourly: approved, undelivered tasks whose 投稿日時 is within the next 24 hours."""
    due = ContentTask.objects.filter(
        status_name=STATUS_APPROVED,
        deleted_at__isnull=True,
        delivered_at__isnull=True,
        publish_at__gt=now,
        publish_at__lte=now + timedelta(hours=24),
    )
    made = [_produce(_of_task(task, Trigger.REMINDER), partial(_remind, task, now)) for task in _linked(due)]
    return sum(bool(created) for created in made)


def _remind(task: ContentTask, now: datetime) -> bool:
    zone = push_settings(tenant=task.tenant).zone
    local = task.publish_at.astimezone(zone)
    text = f"【リマインダー】{_day_word(task.publish_at, now, zone)} {local:%H:%M} 「{task.summary}」の投稿予定です。\n（{task.issue_key}）"
    key = f"reminder:{task.tenant.slug}:{task.issue_key}:{local.date().isoformat()}"
    return _enqueue(task, Trigger.REMINDER, key, text, "reminder")[1]


# -- escalation -------------------------------------------------------------------------------


def escalations_produce(*, now: datetime) -> int:
    """Daily: tasks waiting on a person past their time.

    - in automediaエラー and unchanged for LINEPUSH_ESCALATION_AFTER_HOURS (someone must
      fix and re-approve), or
    - approved, 投稿日時 passed more than an hour ago, and still not delivered.
    """
    hours = settings.LINEPUSH_ESCALATION_AFTER_HOURS
    erroring = ContentTask.objects.filter(
        status_name=STATUS_ERROR, deleted_at__isnull=True, last_synced_at__lte=now - timedelta(hours=hours)
    )
    overdue = ContentTask.objects.filter(
        status_name=STATUS_APPROVED,
        deleted_at__isnull=True,
        delivered_at__isnull=True,
        publish_at__lte=now - OVERDUE_GRACE,
    )
    made = [
        _produce(_of_task(t, Trigger.ESCALATION), partial(_escalate_error, t, now)) for t in _linked(erroring)
    ]
    made += [
        _produce(_of_task(t, Trigger.ESCALATION), partial(_escalate_overdue, t, now))
        for t in _linked(overdue)
    ]
    return sum(bool(created) for created in made)


def _escalate_error(task: ContentTask, now: datetime) -> bool:
    waited = int((now - task.last_synced_at).total_seconds() // 3600)
    text = f"【要対応】「{task.summary}」（{task.issue_key}）は配信エラーのまま {waited} 時間が経過しています。Backlog で内容を確認し、もう一度承認してください。"
    return _escalate(task, now, text)


def _escalate_overdue(task: ContentTask, now: datetime) -> bool:
    zone = push_settings(tenant=task.tenant).zone
    text = f"【要対応】「{task.summary}」（{task.issue_key}）は投稿予定 {_when(task.publish_at, zone)} を過ぎても配信されていません。Backlog で状態を確認してください。"
    return _escalate(task, now, text)


def _escalate(task: ContentTask, now: datetime, text: str) -> bool:
    zone = push_settings(tenant=task.tenant).zone
    key = f"escalation:{task.tenant.slug}:{task.issue_key}:{now.astimezone(zone).date().isoformat()}"
    return _enqueue(task, Trigger.ESCALATION, key, text, "escalation")[1]


# -- failure notices --------------------------------------------------------------------------

REASON_MAX = 1000  # a reason is a summary in a chat, not a log


def delivery_failed_received(sender, *, task: ContentTask, reason: str, auth: bool = False, **kwargs) -> None:
    """deliveries.signals.delivery_failed: the task ended in automediaエラー."""
    failure_notice_enqueue(task=task, failure="token" if auth else "error", reason=reason)


def token_expired_received(
    sender, *, tenant: Tenant, channel: str, issue_key: str, reason: str, **kwargs
) -> None:
    """deliveries.signals.token_expired: the task whose send found it, or (the daily refresh)
    every approved task of that channel still to be sent."""
    tasks = ContentTask.objects.filter(tenant=tenant, deleted_at__isnull=True)
    if issue_key:
        tasks = tasks.filter(issue_key=issue_key)
    else:
        tasks = tasks.filter(channel=channel, status_name=STATUS_APPROVED, delivered_at__isnull=True)
    for task in _linked(tasks):
        failure_notice_enqueue(task=task, failure="token", reason=reason, channel=channel)


def failure_notice_enqueue(
    *, task: ContentTask, failure: str, reason: str, channel: str = ""
) -> LinePushItem | None:
    """An escalation into the task's 連絡グループ, once per (task, approval, failure): the
    retries of one delivery, a repeated write-back and the token notice of the same send
    post once. None when the task names no group."""
    task = ContentTask.objects.select_related("tenant").filter(pk=task.pk).first()
    if task is None or not _group_of(task):
        return None
    return _produce(_of_task(task, Trigger.ESCALATION), partial(_failure_one, task, failure, reason, channel))


def _failure_one(task: ContentTask, failure: str, reason: str, channel: str) -> LinePushItem:
    label = channel_label(channel or task.channel or DEFAULT_CHANNEL)
    if failure == "token":
        head = f"【配信エラー】{label} のトークンが期限切れか無効です。「{task.summary}」（{task.issue_key}）は配信されません。"
        ask = "管理画面でトークンを更新し、Backlog でもう一度承認してください。"
    else:
        head = (
            f"【配信エラー】「{task.summary}」（{task.issue_key}）の配信が失敗しました（automediaエラー）。"
        )
        ask = "Backlog で内容を確認し、もう一度承認してください。"
    text = f"{head}\n理由: {reason[:REASON_MAX]}\n{ask}\n{task.backlog_url}"
    key = f"escalation:failure:{task.tenant.slug}:{task.issue_key}:{task.approval_seq}:{failure}"
    return _enqueue(task, Trigger.ESCALATION, key, text, "failure_notice")[0]


# -- morning digest ---------------------------------------------------------------------------


def digests_produce(*, now: datetime) -> int:
    """Hourly: from an hour before the tenant's digest time (08:00) until four hours after,
    queue one digest per opted-in group for that day, scheduled at the digest time."""
    created = 0
    for tenant in Tenant.objects.filter(is_active=True):
        push = push_settings(tenant=tenant)
        local = now.astimezone(push.zone)
        if not push.digest_hour - 1 <= local.hour < push.digest_hour + DIGEST_CATCH_UP_HOURS:
            continue
        at = datetime.combine(local.date(), time(push.digest_hour), tzinfo=push.zone)
        created += _digests_for(tenant, local.date(), max(at, now))
    return created


def _digests_for(tenant: Tenant, day: date, at: datetime) -> int:
    zone = push_settings(tenant=tenant).zone
    start = datetime.combine(day, time(0), tzinfo=zone)
    tasks = ContentTask.objects.filter(
        tenant=tenant,
        deleted_at__isnull=True,
        status_name__in=[STATUS_APPROVED, STATUS_DELIVERED],
        publish_at__gte=start,
        publish_at__lt=start + timedelta(days=1),
    ).order_by("publish_at", "issue_key")
    by_group: dict[str, list[ContentTask]] = {}
    for task in tasks:
        by_group.setdefault(_group_of(task), []).append(task)
    created = 0
    for group in _digest_groups(tenant):
        todays = by_group.get(group.group_id)
        if todays:
            source = PushSource(tenant, Trigger.MORNING_DIGEST, DIGEST_SOURCE_TABLE, group.group_id)
            created += bool(_produce(source, partial(_digest_one, tenant, group, day, todays, at, zone)))
    return created


def _digest_groups(tenant: Tenant) -> list[LineSource]:
    sources = LineSource.objects.filter(tenant=tenant, left_at__isnull=True, allow_outbound_push=True)
    return [s for s in sources if Trigger.MORNING_DIGEST in (s.push_opt_in_triggers or [])]


def _digest_one(tenant, source, day: date, tasks, at: datetime, zone) -> bool:
    lines = [f"・{t.publish_at.astimezone(zone):%H:%M} {t.summary}（{t.issue_key}）" for t in tasks]
    text = f"【本日の配信予定】{day.month}月{day.day}日({WEEKDAYS[day.weekday()]})\n" + "\n".join(lines)
    _, created = push_enqueue(
        origin="morning_digest",
        tenant=tenant,
        ext_group_id=source.group_id,
        trigger_type=Trigger.MORNING_DIGEST,
        payload=_text(text[:5000]),
        dedupe_key=f"morning_digest:{tenant.slug}:{source.group_id}:{day.isoformat()}",
        source_table=DIGEST_SOURCE_TABLE,
        source_id=source.group_id,
        scheduled_at=at,
    )
    return created

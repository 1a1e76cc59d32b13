"""Effect measurement (効果測定追記): LINE per-unit statistics appended to the Backlog issue.

Every push/multicast of a delivery carries `customAggregationUnits = [aggregation_unit(issue_key)]`
(delivery.py). 24 h and 72 h after a delivery, `effect_reports_run` reads that unit's statistics
(`GET /v2/bot/insight/message/event/aggregation`, `getStatisticsPerUnit` in insight.yml of
line/line-openapi, https://github.com/line/line-openapi) and comments them on the issue. A figure
is null when it is below 20 (privacy;
https://developers.line.biz/ja/docs/messaging-api/unit-based-statistics-aggregation), so the
comment says so instead of printing 0; the per-unit overview has no `delivered` (insight.yml), so
the count comes from automedia's own DeliveryAttempt rows.

Measuring a LINE report and its comment: deliveries/channels/line/effects.py.
Instagram / TikTok / HubSpot publications get their reports from the same planning and
running below; which ones, and how they are measured: deliveries/channel_effects.py.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from backlog_bridge.body.channels import PLATFORM_CHANNELS
from backlog_bridge.client import BacklogClient, BacklogError
from core.due import Lease, claim_one
from core.retry import max_attempts, next_retry_at
from deliveries.channel_effects import channel_measure, planned_labels, planned_recipients
from deliveries.channels.base import TransportError
from deliveries.channels.line.transport import aggregation_unit
from deliveries.channels.registry import channel_part
from deliveries.models import ChannelPost, ContentTask, DeliveryAttempt, EffectReport

logger = logging.getLogger(__name__)

OFFSETS = {EffectReport.Label.H24: timedelta(hours=24), EffectReport.Label.H72: timedelta(hours=72)}
MAX_ATTEMPTS = max_attempts("effect")
LEASE = timedelta(minutes=10)  # a worker that dies mid-report gives its row back after this
REPORT_CLAIM = Lease(length=LEASE, until="due_at", owner=None)  # a claim moves due_at on
BATCH = 100
PREFIX = "[automedia] 効果測定"


# -- planning ------------------------------------------------------------------------


def effect_report_rows(
    *, task: ContentTask, delivered_at: datetime, line_recipients: int | None = None
) -> list[EffectReport]:
    """The reports to plan for one delivery (LINE: 24 h and 72 h), unsaved: created with
    `ignore_conflicts=True`, planning them again changes nothing.

    `line_recipients`: a LINE delivery that just ended passes its count, which spares
    the re-read of its attempts (and of a platform post, which a LINE task has none of).
    """
    if task.channel in PLATFORM_CHANNELS:
        line_recipients = None  # a platform task's count is not LINE's: read what was sent
    post = None
    if line_recipients is None:
        post = ChannelPost.objects.filter(
            task=task, approval_seq=task.approval_seq, phase=ChannelPost.Phase.DONE
        ).first()
    if post is not None:
        return _channel_rows(task, post, delivered_at)
    return _line_rows(task, delivered_at, line_recipients)


def _line_rows(task: ContentTask, delivered_at: datetime, recipients: int | None) -> list[EffectReport]:
    if recipients is None:
        sent = _line_attempts_sent(task)
        if not sent:
            return []
        recipients = sum(int(a.request_summary.get("recipients") or 0) for a in sent)
    return [
        EffectReport(
            tenant_id=task.tenant_id,
            task=task,
            unit=aggregation_unit(task.issue_key),
            label=label,
            due_at=delivered_at + offset,
            delivered_at=delivered_at,
            recipients=recipients,
        )
        for label, offset in OFFSETS.items()
    ]


def _channel_rows(task: ContentTask, post: ChannelPost, delivered_at: datetime) -> list[EffectReport]:
    return [
        EffectReport(
            tenant_id=task.tenant_id,
            task=task,
            channel=post.channel,
            post=post,
            label=label,
            due_at=delivered_at + OFFSETS[label],
            delivered_at=delivered_at,
            recipients=planned_recipients(post),
        )
        for label in planned_labels(post)
    ]


def _line_attempts_sent(task: ContentTask) -> list[DeliveryAttempt]:
    """The chunks LINE accepted for the task's current approval (the delivery that just ended)."""
    return list(
        DeliveryAttempt.objects.filter(
            task=task,
            approval_seq=task.approval_seq,
            channel="line",
            correction__isnull=True,
            outcome__in=DeliveryAttempt.ACCEPTED,
        )
    )


# -- running due reports --------------------------------------------------------------


def effect_reports_run(*, now: datetime | None = None) -> int:
    """Post every due report; returns how many comments were posted."""
    now = now or timezone.now()
    posted = 0
    for report_id, due_at in _due(now):
        report = _claim(report_id, due_at, now)
        if report is not None and _report_one(report, now):
            posted += 1
    return posted


def _due(now: datetime) -> list[tuple[int, datetime]]:
    due = EffectReport.objects.filter(
        done_at__isnull=True,
        due_at__lte=now,
        attempts__lt=MAX_ATTEMPTS,
        tenant__is_active=True,
        task__deleted_at__isnull=True,
    )
    return list(due.order_by("due_at").values_list("pk", "due_at")[:BATCH])


def _claim(report_id: int, due_at: datetime, now: datetime) -> EffectReport | None:
    """A conditional update that only one process wins; due_at doubles as the lease."""
    unfinished = EffectReport.objects.filter(due_at=due_at, done_at__isnull=True)
    if not claim_one(unfinished, pk=report_id, now=now, lease=REPORT_CLAIM):
        return None
    return EffectReport.objects.select_related("task", "tenant", "post").get(pk=report_id)


def _report_one(report: EffectReport, now: datetime) -> bool:
    try:
        stats, comment = _measure(report, now)
        with BacklogClient.for_tenant(report.tenant) as backlog:
            backlog.add_comment(report.task.issue_key, comment)
    except (TransportError, BacklogError, ValueError) as exc:
        _failed(report, exc, now)
        return False
    EffectReport.objects.filter(pk=report.pk).update(done_at=now, result=stats, last_error="")
    return True


def _measure(report: EffectReport, now: datetime) -> tuple[dict, str]:
    """The statistics to store and the comment to post."""
    if report.channel != "line":
        measured = channel_measure(report=report, now=now)
        return measured.result, "\n".join([f"{PREFIX} ({report.label})", *measured.lines])
    return channel_part("line", "effects").line_measure(report=report, now=now)


def _failed(report: EffectReport, exc: Exception, now: datetime) -> None:
    attempts = report.attempts + 1
    again = next_retry_at("effect", attempts, now=now)
    EffectReport.objects.filter(pk=report.pk).update(
        attempts=attempts, last_error=str(exc), **({"due_at": again} if again else {})
    )
    if again is None:
        logger.warning(
            "effect report %s (%s) given up after %d attempts: %s",
            report.task.issue_key,
            report.label,
            attempts,
            exc,
        )

"""Effect measurement (効果測定追記): a delivery's statistics commented on its Backlog issue
24 h and 72 h after it.

Which reports a delivery gets and how one is measured are its channel's
(deliveries/channels/<kind>/effects.py: `planned`, `measured`); planning them once,
claiming the due ones, posting the comment and retrying on the effect ladder of
core/retry.py are here.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from backlog_bridge.client import BacklogClient, BacklogError
from core.due import Lease, claim_one
from core.redact import secrets_redact
from core.retry import max_attempts, next_retry_at
from core.transport import TransportError
from deliveries.channels.registry import channel_part, kind_of
from deliveries.models import ContentTask, EffectReport

logger = logging.getLogger(__name__)

OFFSETS = {EffectReport.Label.H24: timedelta(hours=24), EffectReport.Label.H72: timedelta(hours=72)}
MAX_ATTEMPTS = max_attempts("effect")
LEASE = timedelta(minutes=10)  # a worker that dies mid-report gives its row back after this
REPORT_CLAIM = Lease(length=LEASE, until="due_at", owner=None)  # a claim moves due_at on
BATCH = 100
PREFIX = "[automedia] 効果測定"


# -- planning ------------------------------------------------------------------------


def effect_report_rows(
    *, task: ContentTask, delivered_at: datetime, outcome: dict | None = None
) -> list[EffectReport]:
    """The reports to plan for one delivery, unsaved: created with `ignore_conflicts=True`,
    planning them again changes nothing. `outcome`: the run's, which names the channel that
    published and what it counted (a LINE delivery its recipients, sparing a re-read)."""
    outcome = outcome or {}
    kind = outcome.get("channel") or kind_of(task.channel)
    return channel_part(kind, "effects").planned(task=task, delivered_at=delivered_at, outcome=outcome)


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
    return channel_part(report.channel, "effects").measured(report=report, now=now)


def _failed(report: EffectReport, exc: Exception, now: datetime) -> None:
    attempts = report.attempts + 1
    again = next_retry_at("effect", attempts, now=now)
    EffectReport.objects.filter(pk=report.pk).update(
        attempts=attempts, last_error=secrets_redact(str(exc)), **({"due_at": again} if again else {})
    )
    if again is None:
        logger.warning(
            "effect report %s (%s) given up after %d attempts: %s",
            report.task.issue_key,
            report.label,
            attempts,
            exc,
        )

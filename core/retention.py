"""The retention policy's kernel: rules the apps register, applied in short batches.

Each app registers, in its `AppConfig.ready`, what the policy allows it to remove or
strip (`RetentionRule`: a queryset of the rows due at a given time and what to do with
them); `records_prune` (`manage.py prune_records`, and daily as a django-q2 schedule)
applies every rule. The periods are settings (`RETENTION_*`), read when a rule runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

logger = logging.getLogger(__name__)

DELETE = "deleted"


@dataclass(frozen=True)
class RetentionRule:
    """`due(now)`: the rows the policy lets go at `now` (it must stay true of a row once
    true, and never select pending or failed work). `strip`: None deletes the rows;
    otherwise a function that rewrites one row in memory and returns the changed field
    names, and `verb` says what it did ("text blanked")."""

    table: str
    due: Callable[[datetime], QuerySet]
    strip: Callable[[object], list[str]] | None = None
    verb: str = DELETE


_RULES: list[RetentionRule] = []


def retention_rule_register(*rules: RetentionRule) -> None:
    """Called from an app's ready(); registering the same table and verb twice keeps one."""
    for rule in rules:
        if not any(r.table == rule.table and r.verb == rule.verb for r in _RULES):
            _RULES.append(rule)


def retention_rules() -> list[RetentionRule]:
    return list(_RULES)


def days_ago(now: datetime, setting: str) -> datetime:
    return now - timedelta(days=getattr(settings, setting))


def records_prune(
    *, now: datetime | None = None, dry_run: bool = False, budget_s: float | None = None
) -> list[tuple[str, str, int]]:
    """Every rule applied once: [(table, verb, rows)] in registration order. Given
    `budget_s`, it stops between batches once that long has passed (the next run goes on)."""
    now = now or timezone.now()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    results = []
    for rule in retention_rules():
        rows = rule.due(now).count() if dry_run else _apply(rule, now, deadline)
        results.append((rule.table, rule.verb, rows))
        if rows and not dry_run:
            logger.info("retention: %s %s %d", rule.table, rule.verb, rows)
    return results


def records_prune_scheduled() -> str:
    """The daily django-q2 schedule's task; its result is what it did. It ends well
    within django-q2's task timeout, which would kill it mid-run: a backlog larger than
    one run takes is removed over the next days, or at once by `manage.py prune_records`."""
    budget = settings.Q_CLUSTER["timeout"] * 0.8
    return "; ".join(f"{table} {verb} {rows}" for table, verb, rows in records_prune(budget_s=budget))


def _apply(rule: RetentionRule, now: datetime, deadline: float | None = None) -> int:
    """Batch after batch, each its own short transaction, until none is due. Each batch
    starts after the last row of the one before: a walk from the start would step over the
    entries of every row deleted so far, which stay in the index until a vacuum."""
    size, pause = settings.RETENTION_BATCH_SIZE, settings.RETENTION_BATCH_PAUSE_SECONDS
    total, after = 0, None
    while True:
        done, taken, after = _batch(rule, now, size, after)
        total += done
        # A short batch is the last; a batch that changed nothing would come back the same.
        if taken < size or not done or (deadline is not None and time.monotonic() > deadline):
            return total
        if pause:
            time.sleep(pause)  # let the deliveries' writes through between batches


def _batch(rule: RetentionRule, now: datetime, size: int, after) -> tuple[int, int, object]:
    """(rows changed, rows taken, the last row's pk). On PostgreSQL the batch's rows are
    locked with SKIP LOCKED, so two prunes at once take different rows instead of waiting
    on each other; SQLite lets one writer in at a time anyway."""
    due = rule.due(now).order_by("pk")
    if after is not None:
        due = due.filter(pk__gt=after)
    with transaction.atomic():
        if connection.features.has_select_for_update_skip_locked:
            due = due.select_for_update(skip_locked=True, of=("self",))
        if rule.strip is None:
            ids = list(due.values_list("pk", flat=True)[:size])
            # The rule's condition again in the DELETE: a row that changed since is kept.
            deleted = rule.due(now).filter(pk__in=ids).delete()[0] if ids else 0
            return deleted, len(ids), ids[-1] if ids else after
        rows = list(due[:size])
        return _strip(rule, rows), len(rows), rows[-1].pk if rows else after


def _strip(rule: RetentionRule, rows: list) -> int:
    changed, fields = [], set()
    for row in rows:
        if names := rule.strip(row):
            changed.append(row)
            fields.update(names)
    if changed:
        type(changed[0]).objects.bulk_update(changed, sorted(fields))
    return len(changed)

"""The dashboard's 要対応 list: what waits for a manager, newest first.

- 承認不可 / 配信失敗: a task still in automediaエラー, with why (the refusal's problems,
  the last request's error, or the body's errors);
- 期限切れ（未承認）: a task whose 投稿日時 passed without an approval, so nothing went out
  (`deliveries.models.unapproved_q`), looked for over the last `MISSED_DAYS`;
- LINE 投稿の失敗: a group post that failed in the last `DAYS`, until it is retried;
- 接続エラー: a platform connection that failed its check or was refused at run time
  (a revoked key, an expired token), with the fix, until a check passes.

Every row is limited to the user's tenants (`attention_list`), or to one tenant for its
notices (`attention_rows`, console/notices.py). Each row names the object it is about, so
the dashboard puts its actions on the row (再試行, 取り消す, Backlog で開く, 直し方).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse
from django.utils.translation import gettext as _

from console.line_errors import line_error_explain
from console.models import DeliveryOutcome
from core.access import may_act, scope
from core.models import Connection
from deliveries.models import STATUS_ERROR, ContentTask, DeliveryAttempt, unapproved_q
from line.models import LineSource
from linepush.models import LinePushItem

DAYS = 7
MISSED_DAYS = 30
LIMIT = 50  # rows shown; the count on the card is of them all

REFUSED, FAILED, MISSED, PUSH_FAILED = "refused", "failed", "missed", "push_failed"
CONNECTION = "connection"


@dataclass(frozen=True)
class Attention:
    kind: str  # REFUSED, FAILED, MISSED, PUSH_FAILED or CONNECTION
    at: datetime
    title: str  # the issue key, or the group's name
    summary: str
    reason: str
    url: str
    tenant: str  # the tenant's slug
    tenant_id: int
    object_id: int  # the task's, the group post's or the connection's
    backlog_url: str = ""  # the issue's page in Backlog (tasks only)
    actionable: bool = False  # the user may act on it (a manager of its tenant)

    @property
    def key(self) -> str:
        """Names this row once: a task that fails again later is a new row (a new time)."""
        return f"{self.kind}:{self.object_id}:{self.at.timestamp():.0f}"

    @property
    def label(self) -> str:
        return {
            REFUSED: _("承認不可"),
            FAILED: _("配信失敗"),
            MISSED: _("期限切れ（未承認）"),
            PUSH_FAILED: _("LINE 投稿の失敗"),
            CONNECTION: _("接続エラー"),
        }[self.kind]


@dataclass(frozen=True)
class AttentionList:
    rows: list[Attention]
    total: int


Scope = Callable[[QuerySet], QuerySet]


def attention_list(*, user, now: datetime) -> AttentionList:
    rows = _rows(lambda qs: scope(qs, user), now)
    shown = [replace(row, actionable=may_act(user, row.tenant_id)) for row in rows[:LIMIT]]
    return AttentionList(shown, len(rows))


def attention_rows(*, tenant, now: datetime) -> list[Attention]:
    """Every row of one tenant, newest first."""
    return _rows(lambda qs: qs.filter(tenant=tenant), now)


def _rows(scoped: Scope, now: datetime) -> list[Attention]:
    rows = [row for source in SOURCES for row in source(scoped, now)]
    rows.sort(key=lambda row: row.at, reverse=True)
    return rows


def _task_url(task_id: int) -> str:
    return reverse("admin:deliveries_contenttask_change", args=[task_id])


def _errors(scoped: Scope, now: datetime) -> list[Attention]:
    """Tasks in automediaエラー: refused at approval, or failed delivering."""
    last_outcome = DeliveryOutcome.objects.filter(task=OuterRef("pk")).order_by("-created_at", "-id")
    last_error = DeliveryAttempt.objects.filter(task=OuterRef("pk")).exclude(error="")
    tasks = (
        scoped(ContentTask.objects.filter(status_name=STATUS_ERROR, deleted_at__isnull=True))
        .filter(schedule__isnull=True)
        .select_related("tenant")
        .annotate(
            _kind=Subquery(last_outcome.values("kind")[:1]),
            _detail=Subquery(last_outcome.values("detail")[:1]),
            _at=Subquery(last_outcome.values("created_at")[:1]),
            _error=Subquery(last_error.order_by("-created_at", "-id").values("error")[:1]),
        )
    )
    return [_error_row(task) for task in tasks]


def _error_row(task: ContentTask) -> Attention:
    refused = task._kind == DeliveryOutcome.Kind.REFUSED
    if refused:
        reason = task._detail
    else:
        reason = task._error or " / ".join(task.parse_errors) or task._detail or ""
    at = task._at or task.last_synced_at or task.publish_at
    return Attention(
        REFUSED if refused else FAILED,
        at,
        task.issue_key,
        task.summary,
        reason or "-",
        _task_url(task.pk),
        task.tenant.slug,
        task.tenant_id,
        task.pk,
        task.backlog_url,
    )


def _missed(scoped: Scope, now: datetime) -> list[Attention]:
    tasks = scoped(ContentTask.objects.filter(unapproved_q())).filter(
        publish_at__lt=now, publish_at__gte=now - timedelta(days=MISSED_DAYS)
    )
    reason = _("投稿日時を過ぎても承認されていません（配信されていません）。")
    return [
        Attention(
            MISSED,
            t.publish_at,
            t.issue_key,
            t.summary,
            reason,
            _task_url(t.pk),
            t.tenant.slug,
            t.tenant_id,
            t.pk,
            t.backlog_url,
        )
        for t in tasks.select_related("tenant")
    ]


def _push_failures(scoped: Scope, now: datetime) -> list[Attention]:
    names = LineSource.objects.filter(tenant=OuterRef("tenant"), group_id=OuterRef("ext_group_id"))
    items = scoped(
        LinePushItem.objects.filter(
            status=LinePushItem.Status.FAILED, updated_at__gte=now - timedelta(days=DAYS)
        )
    ).annotate(group_name=Subquery(names.values("name")[:1]))
    return [
        Attention(
            PUSH_FAILED,
            item.updated_at,
            item.group_name or item.ext_group_id,
            str(item.get_trigger_type_display()),
            line_error_explain(item.last_error) if item.last_error else "-",
            reverse("admin:linepush_linepushitem_change", args=[item.pk]),
            item.tenant.slug,
            item.tenant_id,
            item.pk,
        )
        for item in items.select_related("tenant")
    ]


def _connections(scoped: Scope, now: datetime) -> list[Attention]:
    """One row per failing connection of a tenant, linked to its 接続状況 page."""
    failing = scoped(Connection.objects.filter(ok=False, failed_at__isnull=False))
    return [
        Attention(
            CONNECTION,
            row.failed_at,
            f"{row.tenant.name}: {row.get_platform_display()}",
            _("接続できません"),
            row.problem or "-",
            reverse("admin:core_tenant_connections", args=[row.tenant_id]),
            row.tenant.slug,
            row.tenant_id,
            row.pk,
        )
        for row in failing.select_related("tenant")
    ]


# Where the rows come from; a new kind of row is one more function of (scoped, now).
SOURCES = (_errors, _missed, _push_failures, _connections)

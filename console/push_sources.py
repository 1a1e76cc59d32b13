"""Where a LINE group post came from, and what became of it since: an escalation about a task
that has been delivered meanwhile says so on the approval page and the post's page."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from core.timeutil import fmt_jst
from deliveries.models import ContentTask
from linepush.models import LinePushItem
from linepush.producers import DIGEST_SOURCE_TABLE
from linepush.producers import SOURCE_TABLE as TASK_SOURCE_TABLE


def with_source_task(items: QuerySet) -> QuerySet:
    """The post's task (the producers name it by issue key), read in the list's own query."""
    tasks = ContentTask.objects.filter(tenant=OuterRef("tenant"), issue_key=OuterRef("source_id"))
    return items.annotate(
        _task_pk=Subquery(tasks.values("pk")[:1]),
        _task_summary=Subquery(tasks.values("summary")[:1]),
        _task_status=Subquery(tasks.values("status_name")[:1]),
        _task_delivered_at=Subquery(tasks.values("delivered_at")[:1]),
    )


def source_html(item: LinePushItem) -> str:
    """The task with its state now (delivered since the post was made: said plainly), or the kind
    of source for the others."""
    if item.source_table == TASK_SOURCE_TABLE and getattr(item, "_task_pk", None):
        url = reverse("admin:deliveries_contenttask_change", args=[item._task_pk])
        link = format_html('<a href="{}">{} {}</a>', url, item.source_id, item._task_summary or "")
        delivered = item._task_delivered_at
        if delivered is not None and delivered >= item.created_at:
            note = _("この課題は %(when)s に配信済みです（この投稿が知らせる問題は解決しています）。")
            return format_html(
                '{}<br><strong class="am-delivered" data-state="delivered">{}</strong>',
                link,
                note % {"when": fmt_jst(delivered)},
            )
        return format_html('{}<br><span class="am-muted">{}</span>', link, item._task_status or "")
    if item.source_table == DIGEST_SOURCE_TABLE:
        return _("朝のダイジェスト")
    return _("外部からの投稿（API）") if item.source_table else "-"

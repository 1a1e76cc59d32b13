"""The machinery behind the managers' pages stays on them for superusers: a comment command's
parsed arguments, an AI review's model, a push problem's table, a channel post's platform
ids and a stored event's payload."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from backlog_bridge.models import AIReview, BacklogEvent, CommandRun
from deliveries.channels.models import ChannelPost
from linepush.models import LinePushProblem
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db


def _rows(tenant) -> list[tuple[object, str, str]]:
    """(row, what a manager reads, what only a superuser reads)."""
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-4", summary="春の告知")
    return [
        (
            CommandRun.objects.create(
                tenant=tenant,
                issue_key="ACME-4",
                comment_id=9,
                verb="send",
                args={"template": "spring"},
                user={"id": 3, "userId": "kato", "name": "加藤"},
                result="no change",
            ),
            "/automedia send template=spring",
            "&quot;userId&quot;: &quot;kato&quot;",
        ),
        (
            AIReview.objects.create(
                tenant=tenant, issue_key="ACME-4", model="claude-x", ok=True, text="良い"
            ),
            "良い",
            "claude-x",
        ),
        (
            LinePushProblem.objects.create(
                tenant=tenant,
                trigger_type="reminder",
                source_table="content_task",
                source_id="ACME-4",
                error="グループがありません",
                last_seen_at=timezone.now(),
            ),
            "課題 ACME-4",
            "content_task",
        ),
        (
            ChannelPost.objects.create(
                tenant=tenant, task=task, approval_seq=1, channel="tiktok", publish_id="v_pub_9"
            ),
            "ACME-4 春の告知",
            "v_pub_9",
        ),
        (
            BacklogEvent.objects.create(
                tenant=tenant, activity_id=5, type=2, issue_key="ACME-4", payload={"secretish": "raw"}
            ),
            "課題の更新",
            "secretish",
        ),
    ]


def _page(client, row) -> str:
    meta = row._meta
    return client.get(
        reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk])
    ).content.decode()


def test_a_manager_reads_the_record_and_a_superuser_also_its_machinery(client, as_manager, superuser, tenant):
    rows = _rows(tenant)
    managers = [_page(as_manager, row) for row, _, _ in rows]
    client.force_login(superuser)

    for (row, shown, machinery), page in zip(rows, managers, strict=True):
        assert shown in page, type(row).__name__
        assert machinery not in page, type(row).__name__
        assert machinery in _page(client, row), type(row).__name__

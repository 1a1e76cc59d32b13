"""The bulk confirmation's lines: what a retry will do to each selected task, in plain Japanese."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine

from console.bulk import RETRY, bulk_steps
from core.models import TenantMembership
from deliveries.models import STATUS_ERROR, ContentTask
from tests.helpers.console import member
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 7, 1, 0, tzinfo=UTC)  # 10:00 JST


def _retry_text(tenant, **fields) -> str:
    task = ContentTaskFactory(tenant=tenant, status_name=STATUS_ERROR, **fields)
    user = member("yamada", tenant, TenantMembership.Role.MANAGER)
    [step] = bulk_steps(action=RETRY, objs=ContentTask.objects.filter(pk=task.pk), user=user)
    assert step.ok
    return step.text


@time_machine.travel(NOW, tick=False)
def test_it_says_a_task_without_a_time_goes_out_now(tenant):
    assert _retry_text(tenant, publish_at=None).endswith("承認し直し、今すぐ配信します")


@time_machine.travel(NOW, tick=False)
def test_it_says_a_past_time_goes_out_now(tenant):
    text = _retry_text(tenant, publish_at=datetime(2026, 12, 6, 1, 0, tzinfo=UTC))

    assert text.endswith("投稿日時 2026-12-06 10:00:00 (JST) を過ぎているため、今すぐ配信します")


@time_machine.travel(NOW, tick=False)
def test_it_names_a_future_time(tenant):
    text = _retry_text(tenant, publish_at=datetime(2026, 12, 8, 1, 0, tzinfo=UTC))

    assert text.endswith("承認し直し、2026-12-08 10:00:00 (JST) に配信を予約します")

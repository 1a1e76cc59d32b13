"""The record lists' paginator: exact counts, but the planner's estimate for an unfiltered
list of a large table on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection

from backlog_bridge.models import BacklogEvent
from console import paginator
from console.paginator import LargeTablePaginator
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db


def store(tenant, count: int, start: int = 0) -> None:
    BacklogEvent.objects.bulk_create(
        BacklogEvent(tenant=tenant, activity_id=n, type=2, payload={}) for n in range(start, start + count)
    )


def test_it_counts_exactly_below_the_threshold_and_when_filtered():
    tenant = TenantFactory()
    store(tenant, 5)

    assert LargeTablePaginator(BacklogEvent.objects.order_by("-pk"), 100).count == 5
    assert LargeTablePaginator(BacklogEvent.objects.filter(tenant=tenant).order_by("-pk"), 100).count == 5


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the estimate is PostgreSQL's")
def test_an_unfiltered_list_of_a_large_table_takes_the_planners_estimate(monkeypatch):
    tenant = TenantFactory()
    store(tenant, 3)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {BacklogEvent._meta.db_table}")
    store(tenant, 2, start=3)  # not yet in the statistics
    monkeypatch.setattr(paginator, "ESTIMATE_FROM", 1)

    assert LargeTablePaginator(BacklogEvent.objects.order_by("-pk"), 100).count == 3
    assert LargeTablePaginator(BacklogEvent.objects.filter(tenant=tenant).order_by("-pk"), 100).count == 5

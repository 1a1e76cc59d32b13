"""What the push queue costs the database per item (docs/BENCHMARKS.md, LINE group posts,
issue 17): the claim's reads come from indexes, and a batch is recorded in a fixed number
of statements whatever its size."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.due import QUEUED, due_locked
from linepush.models import LinePushAttempt, LinePushItem
from linepush.push import PUSH_LEASE, push_claim
from linepush.sending import push_send
from tests.helpers.linepush import PUSH, enqueue, group, shop

pytestmark = pytest.mark.django_db
Status = LinePushItem.Status


@contextmanager
def no_seq_scan():
    """A test table is tiny: make PostgreSQL show the plan it takes for a large one."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        yield


def plan(queryset) -> str:
    with no_seq_scan():
        return queryset.explain()


def test_the_claim_reads_due_items_in_order_from_an_index_without_sorting_them():
    now = timezone.now()
    due = LinePushItem.objects.filter(status=Status.PENDING, scheduled_at__lte=now)
    rows = due_locked(due, now=now, lease=PUSH_LEASE).order_by("scheduled_at", "id")[:100]

    text = plan(rows)

    assert "line_push_due_idx" in text
    assert "Sort" not in text and "TEMP B-TREE" not in text  # PostgreSQL / SQLite


def test_the_claim_counts_the_items_waiting_for_a_worker_from_an_index():
    held = LinePushItem.objects.filter(PUSH_LEASE.held(timezone.now()), status=Status.PENDING)

    assert "line_push_lease_idx" in plan(held.filter(claimed_by__startswith=QUEUED))


def test_a_batch_is_recorded_with_each_items_own_request_id_in_as_many_statements_as_one(line):
    tenant = shop()
    teams = [group(tenant) for _ in range(6)]

    def send(items: list[LinePushItem]) -> int:
        [claim] = push_claim(now=timezone.now(), limit=100)
        assert sorted(claim.item_ids) == sorted(i.pk for i in items)
        with CaptureQueriesContext(connection) as queries:
            assert push_send(item_ids=claim.item_ids, token=claim.token) == {Status.SENT: len(items)}
        return len(queries)

    one = send([enqueue(tenant, teams[0], key="one")])
    five = send([enqueue(tenant, team, key=f"k{n}") for n, team in enumerate(teams[1:])])

    assert five == one
    accepted = {r.body["to"]: r.request_id for r in line.sent(PUSH)}
    assert len(accepted) == 6 and len(set(accepted.values())) == 6
    for item in LinePushItem.objects.select_related(None):
        assert (item.status, item.request_id) == (Status.SENT, accepted[item.ext_group_id])
        assert LinePushAttempt.objects.get(item=item).request_id == item.request_id


def test_a_pass_with_no_due_item_is_one_read_without_a_transaction():
    """run_scheduler runs this step on every pass, also through a burst of deliveries: an
    idle push queue must not open a transaction (on SQLite, take the write lock) each time."""
    tenant = shop()
    enqueue(tenant, group(tenant), scheduled_at=timezone.now() + timedelta(hours=1))

    with CaptureQueriesContext(connection) as queries:
        assert push_claim(now=timezone.now(), limit=100) == []

    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT"]

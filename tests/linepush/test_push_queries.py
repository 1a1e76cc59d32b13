"""What the push queue costs the database per item (docs/benchmarks/history/linepush.md):
the claim's reads come from indexes, and a batch is recorded in a fixed number
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


def _index_sql(name: str) -> str:
    query = (
        "SELECT indexdef FROM pg_indexes WHERE indexname = %s"
        if connection.vendor == "postgresql"
        else "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(query, [name])
        row = cursor.fetchone()
    assert row, name
    return row[0]


@pytest.mark.parametrize("name", ["line_push_due_idx", "line_push_lease_idx"])
def test_the_queue_indexes_hold_pending_items_only(name):
    """A post is written three times on its way out (claim, take-over, sent), and sent
    posts are most of the table: their row versions add no entry to the claim's indexes."""
    assert "WHERE" in _index_sql(name) and "pending" in _index_sql(name)


def test_an_item_row_is_in_no_index_of_a_single_column_it_has_no_value_for():
    """The tenant leads two indexes already; approved_by / rejected_by are indexed where set."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, LinePushItem._meta.db_table)
    single = {tuple(c["columns"]) for c in constraints.values() if c["index"] and len(c["columns"]) == 1}
    assert ("tenant_id",) not in single
    for column in ("approved_by_id", "rejected_by_id"):
        [name] = [n for n, c in constraints.items() if c["index"] and c["columns"] == [column]]
        assert "IS NOT NULL" in _index_sql(name)


def test_a_deleted_users_posts_keep_their_rows_without_the_user():
    from django.contrib.auth import get_user_model

    tenant = shop()
    user = get_user_model().objects.create_user("manager")
    item = enqueue(tenant, group(tenant), key="approved")
    LinePushItem.objects.filter(pk=item.pk).update(approved_by=user, rejected_by=user)

    user.delete()

    item.refresh_from_db()
    assert (item.approved_by_id, item.rejected_by_id) == (None, None)


def _item_reads(queries) -> list[str]:
    """The columns of each SELECT that loads item rows."""
    rows = f'SELECT "{LinePushItem._meta.db_table}"."id"'
    return [q["sql"].split(" FROM ")[0] for q in queries.captured_queries if q["sql"].startswith(rows)]


def test_the_claim_and_the_task_read_only_the_columns_they_use_in_as_many_statements_as_one(line):
    """Decoding the items' other timestamps was about a tenth of a worker's CPU per post."""
    tenant = shop()
    teams = [group(tenant) for _ in range(7)]

    def claim_and_send(count: int, offset: int) -> tuple[int, list[str]]:
        for n in range(count):
            enqueue(tenant, teams[offset + n], key=f"c{offset + n}")
        with CaptureQueriesContext(connection) as queries:
            [claim] = push_claim(now=timezone.now(), limit=100)
            assert push_send(item_ids=claim.item_ids, token=claim.token) == {Status.SENT: count}
        return len(queries), _item_reads(queries)

    claim_and_send(1, 0)  # the first claim makes the tenant's settings and month rows
    one, reads = claim_and_send(1, 1)
    five, _ = claim_and_send(5, 2)

    assert five == one
    assert len(reads) == 2, "\n".join(reads)  # the claim's candidates, the task's items
    for columns in reads:
        assert '"created_at"' not in columns and '"sent_at"' not in columns and '"last_error"' not in columns
    assert '"payload"' not in reads[0] and '"payload"' in reads[1]
    assert LinePushItem.objects.filter(status=Status.SENT).count() == 7

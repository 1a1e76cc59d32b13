"""The records of sends and write-backs made together (deliveries/publish/sent.py, the end of
deliveries/writeback/issue_update.py): one statement per table for a commit group's rows, each row's
own values, and a lost claim sent back to row by row."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.group_commit import Together
from deliveries.locks import locks_take
from deliveries.models import (
    STATUS_DELIVERED,
    STATUS_ERROR,
    ContentTask,
    DeliveryAttempt,
    DeliveryLock,
    DeliverySchedule,
    EffectReport,
)
from deliveries.publish.sent import ClaimsChanged, Moved, Sent, sends_record
from deliveries.writeback import issue_update
from tests.helpers.deliveries import make_schedule
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

TOKEN = "a" * 32


def claimed(tenant, n: int) -> list[DeliverySchedule]:
    rows = [
        make_schedule(tenant, claimed_by=TOKEN, lease_until=timezone.now() + timedelta(seconds=30))
        for _ in range(n)
    ]
    locks_take(keys=[(tenant.pk, row.task.issue_key) for row in rows], owner=TOKEN, now=timezone.now())
    return rows


def sends(rows: list[DeliverySchedule], *, release=lambda n: n % 2 == 0) -> list[Sent]:
    at = timezone.now()
    return [
        Sent(
            moved=Moved(schedule=row, token=TOKEN, outcome={"ok": True, "n": n}, release=release(n)),
            at=at + timedelta(milliseconds=n),
            attempts=[
                DeliveryAttempt(
                    tenant=row.tenant,
                    task=row.task,
                    approval_seq=1,
                    channel="line",
                    endpoint="/v2/bot/message/multicast",
                    outcome="sent",
                    retry_key=f"key-{n}",
                )
            ],
        )
        for n, row in enumerate(rows)
    ]


def statements(record, items) -> list[str]:
    with CaptureQueriesContext(connection) as sql:
        record(items)
    return [q["sql"].split()[0] for q in sql.captured_queries]


def test_five_sends_of_a_group_cost_the_same_statements_as_two():
    tenant = TenantFactory(slug="acme")
    two = statements(sends_record, sends(claimed(tenant, 2)))  # one released, one kept
    five = statements(sends_record, sends(claimed(tenant, 5)))

    assert five == two
    assert sorted(five) == ["DELETE", "INSERT", "UPDATE", "UPDATE", "UPDATE"]


def test_each_row_of_a_group_gets_its_own_values():
    tenant = TenantFactory(slug="acme")
    rows = claimed(tenant, 4)
    items = sends(rows)

    sends_record(items)

    for n, (row, sent) in enumerate(zip(rows, items, strict=True)):
        stored = DeliverySchedule.objects.get(pk=row.pk)
        assert stored.stage == DeliverySchedule.Stage.WRITEBACK
        assert stored.outcome == {"ok": True, "n": n}
        assert (stored.claimed_by == "") is sent.moved.release  # released rows are due for their write-back
        assert (row.stage, row.outcome, row.claimed_by) == (stored.stage, stored.outcome, stored.claimed_by)
        assert ContentTask.objects.get(pk=row.task_id).delivered_at == sent.at
        assert DeliveryAttempt.objects.get(task=row.task).retry_key == f"key-{n}"
    locked = set(DeliveryLock.objects.values_list("issue_key", flat=True))
    assert locked == {
        row.task.issue_key for row, sent in zip(rows, items, strict=True) if not sent.moved.release
    }


def test_a_lost_claim_in_a_group_sends_it_back_row_by_row_where_that_row_is_read_back():
    tenant = TenantFactory(slug="acme")
    rows = claimed(tenant, 3)
    items = sends(rows, release=lambda n: False)
    DeliverySchedule.objects.filter(pk=rows[1].pk).update(claimed_by="b" * 32)  # another scheduler's now

    with pytest.raises(ClaimsChanged), transaction.atomic():  # the group's transaction, rolled back
        sends_record(items)
    for item in items:  # core/group_commit.py: then each write alone
        Together(sends_record, item)()

    assert [DeliverySchedule.objects.get(pk=row.pk).stage for row in rows] == [
        "writeback",
        "deliver",
        "writeback",
    ]
    assert rows[1].stage == "deliver" and rows[1].claimed_by == "b" * 32  # read back, not what was meant
    assert DeliveryAttempt.objects.count() == 3  # the lost row's send is still on record


def finished(rows: list[DeliverySchedule]) -> list:
    ended = []
    for n, row in enumerate(rows):
        row.task.delivered_at = timezone.now()
        ok = n % 3 != 2
        outcome = {"ok": True, "recipients": 30 + n} if ok else {"ok": False, "reason": "400"}
        mirror = {"status_name": STATUS_DELIVERED if ok else STATUS_ERROR, "status_id": 5 if ok else 6}
        ended.append(issue_update._Finished(schedule=row, outcome=outcome, mirror=mirror))
    return ended


def test_the_write_backs_of_a_group_cost_the_same_statements_as_two():
    tenant = TenantFactory(slug="acme")
    two = statements(issue_update._finished, finished(claimed(tenant, 3))[1:])  # one sent, one failed
    six = statements(issue_update._finished, finished(claimed(tenant, 6)))
    marks = statements(
        issue_update._tried, [(row.pk, {"ok": True, "tried": True}) for row in claimed(tenant, 4)]
    )

    assert six == two
    assert marks == ["UPDATE"]


def test_each_write_back_of_a_group_gets_its_own_values():
    tenant = TenantFactory(slug="acme")
    rows = claimed(tenant, 4)
    marked = claimed(tenant, 2)

    issue_update._tried([(row.pk, {"ok": True, "tried": True, "n": n}) for n, row in enumerate(marked)])
    issue_update._finished(finished(rows))

    assert [DeliverySchedule.objects.get(pk=row.pk).outcome["n"] for row in marked] == [0, 1]
    assert not DeliverySchedule.objects.filter(pk__in=[row.pk for row in rows]).exists()
    statuses = [ContentTask.objects.get(pk=row.task_id).status_name for row in rows]
    assert statuses == [STATUS_DELIVERED, STATUS_DELIVERED, STATUS_ERROR, STATUS_DELIVERED]
    planned = EffectReport.objects.values_list("task_id", "recipients")
    assert sorted(set(planned)) == sorted((row.task_id, 30 + n) for n, row in enumerate(rows) if n != 2)

"""The due-work kernel (core/due.py) on two real queues: group push items (a lease and
an owner token) and Backlog events (the lease alone is the claim)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client import REGISTRY

from backlog_bridge.models import BacklogEvent
from core.due import QUEUED, Lease, claim, claim_one, new_token, queued_at, release, renew, take_over
from linepush.models import LinePushItem
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

LEASE = Lease(length=timedelta(minutes=1))
HOLD = Lease(length=timedelta(minutes=1), until="claimed_until", owner=None)


@pytest.fixture
def tenant():
    return TenantFactory()


def item(tenant, n: int, *, due_in: float = -1) -> LinePushItem:
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="C1",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "x"}],
        dedupe_key=f"k{n}",
        scheduled_at=timezone.now() + timedelta(seconds=due_in),
    )


def due(now):
    return LinePushItem.objects.filter(scheduled_at__lte=now).order_by("pk")


def test_it_claims_only_due_unclaimed_rows(tenant):
    now = timezone.now()
    ready, later, held = item(tenant, 1), item(tenant, 2, due_in=60), item(tenant, 3)
    LinePushItem.objects.filter(pk=held.pk).update(
        lease_until=now + timedelta(seconds=30), claimed_by="other"
    )

    [(pk, token)] = claim(due(now), now=now, lease=LEASE, limit=10)

    assert pk == ready.pk and token
    row = LinePushItem.objects.get(pk=ready.pk)
    assert row.claimed_by == token and row.lease_until == now + timedelta(minutes=1)
    assert LinePushItem.objects.get(pk=later.pk).lease_until is None
    assert LinePushItem.objects.get(pk=held.pk).claimed_by == "other"


def test_a_second_claimer_gets_none(tenant):
    now = timezone.now()
    item(tenant, 1), item(tenant, 2)
    assert len(claim(due(now), now=now, lease=LEASE, limit=10)) == 2
    assert claim(due(now), now=now, lease=LEASE, limit=10) == []


def test_it_takes_an_expired_lease_again(tenant):
    now = timezone.now()
    row = item(tenant, 1)
    [(_, first)] = claim(due(now), now=now, lease=LEASE, limit=1)
    assert claim(due(now), now=now + timedelta(seconds=59), lease=LEASE, limit=1) == []

    later = now + timedelta(minutes=1)  # the first claimer died: its lease ran out
    [(pk, second)] = claim(due(later), now=later, lease=LEASE, limit=1)

    assert pk == row.pk and second != first


def claimed_again() -> float:
    return (
        REGISTRY.get_sample_value("automedia_claims_expired_total", {"queue": "linepush.linepushitem"}) or 0
    )


def test_a_row_claimed_after_its_lease_ran_out_is_counted_and_a_released_one_is_not(tenant):
    now = timezone.now()
    item(tenant, 1)  # its claimer dies
    released = item(tenant, 2)
    claim(due(now), now=now, lease=LEASE, limit=2)
    release(LinePushItem, pk=released.pk, lease=LEASE)  # given back: no lease end
    before = claimed_again()

    later = now + timedelta(minutes=1)
    assert len(claim(due(later), now=later, lease=LEASE, limit=2)) == 2

    assert claimed_again() - before == 1  # the first only


def test_it_shares_one_owner_token_and_respects_limit_and_choice(tenant):
    now = timezone.now()
    rows = [item(tenant, n) for n in range(4)]
    skip_first = lambda candidates: candidates[1:]  # noqa: E731

    claimed = claim(due(now), now=now, lease=LEASE, limit=2, read=4, choose=skip_first, owner="batch")

    assert claimed == [(rows[1].pk, "batch"), (rows[2].pk, "batch")]


def test_renew_extends_only_your_own_claim(tenant):
    now = timezone.now()
    row = item(tenant, 1)
    [(_, token)] = claim(due(now), now=now, lease=LEASE, limit=1)
    later = now + timedelta(seconds=40)

    assert renew(LinePushItem, pk=row.pk, now=later, lease=LEASE, owner="not-mine") is False
    assert LinePushItem.objects.get(pk=row.pk).lease_until == now + timedelta(minutes=1)
    assert renew(LinePushItem, pk=row.pk, now=later, lease=LEASE, owner=token) is True
    assert LinePushItem.objects.get(pk=row.pk).lease_until == later + timedelta(minutes=1)


def test_release_frees_it_for_the_next_claimer_only_when_you_hold_it(tenant):
    now = timezone.now()
    row = item(tenant, 1)
    [(_, token)] = claim(due(now), now=now, lease=LEASE, limit=1)

    assert release(LinePushItem, pk=row.pk, lease=LEASE, owner="not-mine") is False
    assert release(LinePushItem, pk=row.pk, lease=LEASE, owner=token, last_error="later") is True

    freed = LinePushItem.objects.get(pk=row.pk)
    assert (freed.lease_until, freed.claimed_by, freed.last_error) == (None, "", "later")
    assert [pk for pk, _ in claim(due(now), now=now, lease=LEASE, limit=1)] == [row.pk]


def test_claim_one_must_change_exactly_the_row_and_a_lease_without_owner_is_the_claim(tenant):
    now = timezone.now()
    event = BacklogEvent.objects.create(tenant=tenant, activity_id=1, type=2, payload={})
    pending = BacklogEvent.objects.filter(outcome="pending")

    assert claim_one(pending, pk=event.pk, now=now, lease=HOLD, attempts=1) is True
    assert claim_one(pending, pk=event.pk, now=now, lease=HOLD) is False  # held
    assert claim_one(pending, pk=event.pk + 1, now=now, lease=HOLD) is False  # no such row
    assert BacklogEvent.objects.get(pk=event.pk).attempts == 1

    release(BacklogEvent, pk=event.pk, lease=HOLD)
    BacklogEvent.objects.filter(pk=event.pk).update(outcome="done")
    assert claim_one(pending, pk=event.pk, now=now, lease=HOLD) is False  # no longer among the rows


def test_it_claims_a_batch_in_one_update_on_every_database(tenant):
    now = timezone.now()
    for n in range(3):
        item(tenant, n)
    with CaptureQueriesContext(connection) as queries:
        claimed = claim(due(now), now=now, lease=LEASE, limit=3)
    assert len(claimed) == 3 and len({token for _, token in claimed}) == 3
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 1
    if connection.vendor == "postgresql":
        assert any("SKIP LOCKED" in q["sql"] for q in queries.captured_queries)
    tokens = dict(LinePushItem.objects.values_list("pk", "claimed_by"))
    assert all(tokens[pk] == token for pk, token in claimed)


def test_a_pass_with_nothing_free_is_one_read_without_a_transaction_or_a_choice(tenant):
    now = timezone.now()
    item(tenant, 1, due_in=60)  # not due yet
    held = item(tenant, 2)
    LinePushItem.objects.filter(pk=held.pk).update(lease_until=now + timedelta(seconds=30), claimed_by="x")
    chosen = []

    with CaptureQueriesContext(connection) as queries:
        claimed = claim(
            due(now), now=now, lease=LEASE, limit=10, choose=lambda rows: chosen.append(rows) or rows
        )

    assert claimed == [] and chosen == []
    assert len(queries.captured_queries) == 1  # no SAVEPOINT / BEGIN: on SQLite, no write lock
    assert queries.captured_queries[0]["sql"].startswith("SELECT")


def test_a_row_another_claimer_took_between_read_and_write_is_not_reported_as_claimed(tenant):
    now = timezone.now()
    rows = [item(tenant, n) for n in range(3)]

    def choose_while_another_claims_the_first(candidates):
        assert claim_one(due(now), pk=candidates[0].pk, now=now, lease=LEASE, owner="other")
        return candidates

    claimed = claim(due(now), now=now, lease=LEASE, limit=3, choose=choose_while_another_claims_the_first)

    assert [pk for pk, _ in claimed] == [rows[1].pk, rows[2].pk]
    assert LinePushItem.objects.get(pk=rows[0].pk).claimed_by == "other"


def test_queued_tokens_sort_by_when_they_were_made():
    with time_machine.travel("2026-12-02 10:00:00+00:00", tick=False):
        first = new_token(queued=True)
    with time_machine.travel("2026-12-02 10:00:00.000001+00:00", tick=False):
        second = new_token(queued=True)
    assert first.startswith(QUEUED) and len(first) == len(second) == 33
    assert first < second and first.encode() < second.encode()
    assert queued_at(second) - queued_at(first) == timedelta(microseconds=1)
    assert queued_at(new_token()) is None and queued_at("q-not-a-time") is None


def queued(tenant, n: int, *, made: str, lease_left: float, now) -> LinePushItem:
    """An item whose claim waits in the broker: its token made at `made`, its lease ending
    `lease_left` seconds after `now`."""
    with time_machine.travel(made, tick=False):
        token = new_token(queued=True)
    row = item(tenant, n)
    LinePushItem.objects.filter(pk=row.pk).update(
        claimed_by=token, lease_until=now + timedelta(seconds=lease_left)
    )
    return LinePushItem.objects.get(pk=row.pk)


SHORT = Lease(length=timedelta(seconds=5))


def test_a_task_that_waited_half_a_lease_renews_the_queued_claims_behind_it(tenant):
    now = timezone.now()
    at = lambda s: (now + timedelta(seconds=s)).isoformat()  # noqa: E731
    task = queued(tenant, 1, made=at(-3), lease_left=2, now=now)  # waited 3 s of a 5 s lease
    ahead = queued(tenant, 2, made=at(-3.5), lease_left=1.5, now=now)  # made before: maybe lost
    behind = queued(tenant, 3, made=at(-2.9), lease_left=2.1, now=now)
    fresh = queued(tenant, 4, made=at(-0.5), lease_left=4.5, now=now)  # more than half a lease left
    expired = queued(tenant, 5, made=at(-2), lease_left=-0.1, now=now)  # free: the scheduler's
    running = item(tenant, 6)
    LinePushItem.objects.filter(pk=running.pk).update(
        claimed_by="r" * 32, lease_until=now + timedelta(seconds=1)
    )

    mine, taken = take_over(LinePushItem, pks=[task.pk], now=now, lease=SHORT, token=task.claimed_by)

    assert taken == [task.pk]
    leases = dict(LinePushItem.objects.values_list("pk", "lease_until"))
    assert leases[behind.pk] == now + timedelta(seconds=5)
    for row in (ahead, fresh, expired):
        assert leases[row.pk] == row.lease_until
    assert leases[running.pk] == now + timedelta(seconds=1)


def test_a_task_that_waited_less_than_half_a_lease_writes_nothing_but_its_own_rows(tenant):
    now = timezone.now()
    at = lambda s: (now + timedelta(seconds=s)).isoformat()  # noqa: E731
    task = queued(tenant, 1, made=at(-1), lease_left=4, now=now)
    behind = queued(tenant, 2, made=at(-0.9), lease_left=1, now=now)  # (a lease shortened by hand)

    with CaptureQueriesContext(connection) as queries:
        take_over(LinePushItem, pks=[task.pk], now=now, lease=SHORT, token=task.claimed_by)

    assert len([q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]) == 1
    assert LinePushItem.objects.get(pk=behind.pk).lease_until == behind.lease_until

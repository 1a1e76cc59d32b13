"""Claiming due schedules: leases, several schedulers, per-tenant capacity, the loop step."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone
from django_q.signing import SignedPackage
from prometheus_client import REGISTRY

from core.due import QUEUED, new_token, queue_broker
from core.holders import PUSHER, current, holder_token
from core.orm_broker import claims_prefetch
from deliveries.claimed import lease_release, lease_renew, schedules_take
from deliveries.management.commands.run_scheduler import Command
from deliveries.models import DeliverySchedule, SchedulerHeartbeat
from deliveries.publish.scheduler import next_wakeup, others_waiting, schedules_claim, schedules_step
from deliveries.scheduler_steps import Pass
from tests.helpers.deliveries import make_schedule
from tests.helpers.factories import TenantFactory
from tests.helpers.holders import OtherHolder

pytestmark = pytest.mark.django_db


def test_it_claims_a_due_row_under_a_lease():
    schedule = make_schedule()
    now = timezone.now()

    [(schedule_id, token)] = schedules_claim(now=now)

    schedule.refresh_from_db()
    assert schedule_id == schedule.pk and schedule.claimed_by == token
    assert schedule.lease_until > now


def test_it_does_not_claim_a_row_that_is_not_due_yet():
    make_schedule(due_in=10)

    assert schedules_claim(now=timezone.now()) == []


def test_it_never_hands_out_a_row_twice_while_its_lease_holds(settings):
    make_schedule()
    now = timezone.now()

    first = schedules_claim(now=now)
    second = schedules_claim(now=now + timedelta(seconds=settings.DELIVERY_LEASE_SECONDS - 0.5))

    assert len(first) == 1 and second == []


def test_a_killed_deliverers_rows_are_claimed_again_at_once_not_at_their_lease_end(settings):
    schedule, now = make_schedule(), timezone.now()
    with OtherHolder() as deliverer:  # its lock goes with its process
        lease_until = now + timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
        DeliverySchedule.objects.filter(pk=schedule.pk).update(
            claimed_by=deliverer.token, lease_until=lease_until
        )
        assert schedules_claim(now=now) == []  # alive: its claim holds

        deliverer.die()
        [(schedule_id, token)] = schedules_claim(now=now)

    assert schedule_id == schedule.pk and token.startswith(QUEUED)


def test_it_claims_again_once_a_dead_workers_lease_expires(settings):
    make_schedule()
    now = timezone.now()
    [(_, first)] = schedules_claim(now=now)

    expired_before = claimed_again()
    [(_, second)] = schedules_claim(now=now + timedelta(seconds=settings.DELIVERY_LEASE_SECONDS + 1))

    assert second != first
    assert claimed_again() - expired_before == 1  # automedia_claims_expired_total (core/metrics.py)


def claimed_again() -> float:
    labels = {"queue": "deliveries.deliveryschedule"}
    return REGISTRY.get_sample_value("automedia_claims_expired_total", labels) or 0


def test_it_limits_deliveries_in_flight_per_tenant():
    tenant = TenantFactory(slug="acme", max_concurrent_deliveries=2)
    other = TenantFactory(slug="other", max_concurrent_deliveries=4)
    for _ in range(4):
        make_schedule(tenant)
    make_schedule(other)

    claimed = schedules_claim(now=timezone.now())

    tenants = list(
        DeliverySchedule.objects.filter(pk__in=[c[0] for c in claimed]).values_list("tenant__slug", flat=True)
    )
    assert sorted(tenants) == ["acme", "acme", "other"]


def test_it_renews_and_releases_only_its_own_claim():
    schedule = make_schedule()
    now = timezone.now()
    [(schedule_id, token)] = schedules_claim(now=now)

    assert lease_renew(schedule_id=schedule_id, token="someone-else", now=now) is False
    assert lease_renew(schedule_id=schedule_id, token=token, now=now) is True
    assert lease_release(schedule_id=schedule_id, token=token, due_at=now + timedelta(minutes=2)) is True
    schedule.refresh_from_db()
    assert (schedule.claimed_by, schedule.lease_until) == ("", None)


def test_it_sleeps_until_the_next_due_row_but_never_longer_than_the_poll():
    with time_machine.travel(timezone.now(), tick=False):  # the row is due 0.2 s after `now`, exactly
        now = timezone.now()
        assert next_wakeup(now=now, poll=0.5) == 0.5
        make_schedule(due_in=0.2)
        assert next_wakeup(now=now, poll=0.5) == pytest.approx(0.2)
    assert next_wakeup(now=now, poll=0.1) == 0.1


def test_the_loop_step_enqueues_each_claimed_row_and_beats(monkeypatch):
    make_schedule()
    make_schedule(TenantFactory(slug="other"))
    command = Command()
    command.name, command.batch = "test-scheduler", 50

    with mock.patch("django_q.tasks.async_task") as enqueue:
        assert command.handle_one() is Pass.WORKED
        assert command.handle_one() is Pass.IDLE

    calls = enqueue.call_args_list  # two rows, four workers: one task each
    assert {call.args[0] for call in calls} == {"deliveries.tasks.deliver_batch"}
    assert sorted(schedule_id for call in calls for schedule_id, _ in call.args[1]) == sorted(
        DeliverySchedule.objects.values_list("pk", flat=True)
    )
    # One broker for every task of the process: django-q2 would make one per task (with
    # Redis, a new connection each).
    assert all(
        call.kwargs == {"cluster": "deliveries", "broker": queue_broker("deliveries")} for call in calls
    )
    assert queue_broker("deliveries").list_key == "deliveries"
    assert SchedulerHeartbeat.objects.get(name="test-scheduler").last_beat is not None


def test_a_dead_workers_claim_is_claimable_again_within_seconds():
    make_schedule()
    now = timezone.now()
    [(schedule_id, queued)] = schedules_claim(now=now)
    assert list(schedules_take(claims=[(schedule_id, queued)], now=now)) == [schedule_id]
    # The worker dies here: its keeper renews nothing any more.

    assert schedules_claim(now=now + timedelta(seconds=4)) == []
    [(again, token)] = schedules_claim(now=now + timedelta(seconds=6))
    assert again == schedule_id and token != queued


def test_a_stranded_lease_stops_counting_against_the_tenants_capacity_within_seconds():
    tenant = TenantFactory(slug="acme", max_concurrent_deliveries=1)
    stranded, waiting = make_schedule(tenant, due_in=-2), make_schedule(tenant)
    now = timezone.now()
    [(schedule_id, _)] = schedules_claim(now=now)  # its task is lost with a killed worker
    assert schedule_id == stranded.pk
    assert schedules_claim(now=now + timedelta(seconds=1)) == []  # the tenant is at capacity

    later = now + timedelta(seconds=6)
    assert [pk for pk, _ in schedules_claim(now=later)] == [stranded.pk]  # capacity 1: the oldest first
    DeliverySchedule.objects.filter(pk=stranded.pk).delete()  # … delivered
    assert [pk for pk, _ in schedules_claim(now=later)] == [waiting.pk]


def test_a_task_that_waited_out_its_lease_in_the_broker_still_runs_its_row_and_only_once():
    make_schedule()
    now = timezone.now()
    [(schedule_id, first)] = schedules_claim(now=now)
    later = now + timedelta(seconds=6)  # the task waited behind a burst: claimed again
    [(_, second)] = schedules_claim(now=later)

    # The first copy to start takes the row from the claim still queued …
    [(_, mine)] = [
        (pk, held.owner) for pk, held in schedules_take(claims=[(schedule_id, first)], now=later).items()
    ]
    # … and the second copy finds nothing to do.
    assert schedules_take(claims=[(schedule_id, second)], now=later) == {}
    assert DeliverySchedule.objects.get(pk=schedule_id).claimed_by == mine
    assert first.startswith(QUEUED) and second.startswith(QUEUED) and not mine.startswith(QUEUED)


def test_a_running_claim_is_never_taken_by_another_task():
    make_schedule()
    now = timezone.now()
    [(schedule_id, token)] = schedules_claim(now=now)
    assert schedules_take(claims=[(schedule_id, token)], now=now)

    assert schedules_take(claims=[(schedule_id, token)], now=now) == {}  # the same task, run twice
    assert schedules_take(claims=[(schedule_id, new_token(queued=True))], now=now) == {}


def test_the_loop_writes_its_heartbeat_at_most_once_a_second():
    command = Command()
    command.name, command.batch = "test-scheduler", 50
    start = timezone.now()

    with time_machine.travel(start, tick=False) as clock:
        command.handle_one()
        first = SchedulerHeartbeat.objects.get(name="test-scheduler").last_beat
        clock.shift(0.5)
        command.handle_one()  # a busy loop's next pass: no write
        assert SchedulerHeartbeat.objects.get(name="test-scheduler").last_beat == first
        clock.shift(0.5)
        command.handle_one()
        assert SchedulerHeartbeat.objects.get(name="test-scheduler").last_beat == first + timedelta(seconds=1)


def _deliverer_workers(settings, workers: int, deliverers: int = 1) -> None:
    clusters = {**settings.Q_CLUSTER["ALT_CLUSTERS"], "deliveries": {"workers": workers}}
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "ALT_CLUSTERS": clusters}
    settings.DATABASE_PROCESSES = {**settings.DATABASE_PROCESSES, "deliverer": deliverers}


def _tasks_of_one_pass(rows: int) -> list[list[tuple[int, str]]]:
    tenant = TenantFactory(max_concurrent_deliveries=rows)
    for _ in range(rows):
        make_schedule(tenant)
    with mock.patch("django_q.tasks.async_task") as enqueue:
        assert schedules_step(now=timezone.now(), limit=50) is True
    return [call.args[1] for call in enqueue.call_args_list]


def test_the_rows_of_one_task_share_one_queued_token_and_each_task_has_its_own(settings):
    """One token per task: the claim's UPDATE has a branch per task, not per row (building a
    CASE branch per row was a quarter of the scheduler's CPU in a burst)."""
    settings.DELIVERY_TASK_SIZE = 3
    _deliverer_workers(settings, 1)

    tasks = _tasks_of_one_pass(7)

    assert [len(rows) for rows in tasks] == [3, 3, 1]
    tokens = [{token for _, token in rows} for rows in tasks]
    assert all(len(t) == 1 for t in tokens) and len(set.union(*tokens)) == 3
    assert all(next(iter(t)).startswith(QUEUED) for t in tokens)
    stored = dict(DeliverySchedule.objects.values_list("pk", "claimed_by"))
    assert all(stored[pk] == token for rows in tasks for pk, token in rows)


@pytest.mark.parametrize(
    ("rows", "workers", "deliverers", "task_size", "sizes"),
    [
        (9, 2, 1, 50, [5, 4]),  # a burst: as few tasks as keep every worker busy
        (7, 4, 1, 50, [2, 2, 2, 1]),
        (2, 4, 1, 50, [1, 1]),  # fewer rows than workers: one each
        (9, 2, 2, 50, [3, 3, 3]),  # every deliverer's workers
        (30, 2, 1, 10, [10, 10, 10]),  # never more than DELIVERY_TASK_SIZE in one task
    ],
)
def test_a_pass_spreads_its_rows_evenly_over_the_deliverers_workers(
    settings, rows, workers, deliverers, task_size, sizes
):
    """A task's own cost (django-q2's, its batch's reads, its refill) is paid once for its
    rows, so a burst goes out in as few tasks as keep every worker busy."""
    settings.DELIVERY_TASK_SIZE = task_size
    _deliverer_workers(settings, workers, deliverers)

    tasks = _tasks_of_one_pass(rows)

    assert [len(rows) for rows in tasks] == sizes
    assert len({token for rows in tasks for _, token in rows}) == len(sizes)


def test_the_loop_lets_django_check_its_connection_once_a_second_not_on_every_pass(monkeypatch):
    """With CONN_HEALTH_CHECKS each check makes the next query a round trip to the server; a
    burst runs many passes a second."""
    import core.keeper

    checks, passes = [], []
    monkeypatch.setattr(core.keeper, "close_old_connections", lambda: checks.append(1))
    command = Command()

    def one_pass():
        passes.append(1)
        command.stopping = len(passes) == 20
        return Pass.WORKED  # due work: the loop goes on at once

    monkeypatch.setattr(command, "handle_one", one_pass)
    monkeypatch.setattr("signal.signal", lambda *args: None)
    command.handle(poll=0.1, batch=50)

    assert len(passes) == 20 and len(checks) == 1


@pytest.mark.parametrize(
    ("found", "slept"), [(Pass.IDLE, 0.5), (Pass.HELD, 0.05)], ids=["nothing due", "due work held back"]
)
def test_the_loop_looks_again_soon_while_a_queue_holds_due_work_back_and_after_its_poll_otherwise(
    monkeypatch, settings, found, slept
):
    """A cap on what waits for the workers frees room as they start their tasks, many times
    a second in a drain: sleeping a whole poll there bounded the drain
    (docs/benchmarks/history/linepush.md)."""
    import core.keeper

    settings.SCHEDULER_HELD_POLL_SECONDS = 0.05
    command, sleeps = Command(), []
    monkeypatch.setattr(command, "handle_one", lambda: found)
    monkeypatch.setattr(command, "_sleep", lambda seconds: sleeps.append(seconds) or command._stop())
    monkeypatch.setattr("signal.signal", lambda *args: None)
    monkeypatch.setattr(core.keeper, "close_old_connections", lambda: None)

    command.handle(poll=0.5, batch=50)

    assert sleeps == [slept]  # nothing due here: next_wakeup gives the poll


def test_the_rows_a_pass_claims_per_queue_default_to_scheduler_batch(settings):
    settings.SCHEDULER_BATCH = 123

    options = Command().create_parser("manage.py", "run_scheduler").parse_args([])

    assert options.batch == 123


def test_a_tenant_at_its_limit_leaves_another_tenants_row_due_at_the_same_second_claimable():
    busy = TenantFactory(slug="acme", max_concurrent_deliveries=2)
    other = TenantFactory(slug="other")
    for _ in range(5):
        make_schedule(busy, due_in=-2)
    waiting = make_schedule(other)  # due after all of busy's rows
    now = timezone.now()

    with mock.patch("django_q.tasks.async_task"):
        assert schedules_step(now=now, limit=3) is True
        claimed = set(
            DeliverySchedule.objects.filter(claimed_by__startswith=QUEUED).values_list("pk", flat=True)
        )
        assert waiting.pk in claimed and len(claimed) == 3
        # busy is at its limit: its rows are left to the tasks whose sends end (no busy loop).
        assert schedules_step(now=now, limit=3) is False


def test_a_campaign_leaves_another_tenants_rows_due_the_same_second_in_the_first_tasks():
    campaign, neighbour = TenantFactory(slug="acme"), TenantFactory(slug="other")
    for _ in range(30):
        make_schedule(campaign)
    for _ in range(3):
        make_schedule(neighbour)  # made last, due the same second
    DeliverySchedule.objects.update(due_at=timezone.now().replace(microsecond=0) - timedelta(seconds=1))

    claimed = schedules_claim(now=timezone.now(), limit=10)

    owners = dict(DeliverySchedule.objects.values_list("pk", "tenant__slug"))
    assert [owners[pk] for pk, _ in claimed][:6] == ["acme", "other"] * 3  # taking turns
    assert len(claimed) == 8  # a share of 5 each; the loop's next pass, at once, takes more


def test_each_tenant_s_share_of_a_pass_is_bounded_while_several_have_due_rows():
    campaign, neighbour = TenantFactory(slug="acme"), TenantFactory(slug="other")
    for _ in range(30):
        make_schedule(campaign, due_in=-5)
    make_schedule(neighbour, due_in=-1)  # due after every row of the campaign

    claimed = schedules_claim(now=timezone.now(), limit=10)

    owners = dict(DeliverySchedule.objects.values_list("pk", "tenant__slug"))
    assert sorted(owners[pk] for pk, _ in claimed) == ["acme"] * 5 + ["other"]


def test_a_send_is_waiting_for_others_while_due_and_free_or_queued_not_while_running():
    mine, other = TenantFactory(slug="acme"), TenantFactory(slug="other")
    make_schedule(mine)
    row = make_schedule(other)
    now = timezone.now()

    assert others_waiting(tenants=[mine.pk], now=now)  # due and free
    [(_, token)] = schedules_claim(now=now, tenants=[other.pk])
    assert others_waiting(tenants=[mine.pk], now=now)  # its task waits in the broker
    schedules_take(claims=[(row.pk, token)], now=now)
    assert not others_waiting(tenants=[mine.pk], now=now)  # a worker runs it
    assert not others_waiting(tenants=[mine.pk, other.pk], now=now)


def _taken_by_a_pusher(claims: list[tuple[int, str]], func: str = "deliveries.tasks.deliver_batch") -> None:
    """A pusher takes the task of `claims` from the broker, as django-q2's does."""
    package = SignedPackage.dumps({"id": "t", "func": func, "args": (claims,), "kwargs": {}})
    claims_prefetch([(1, package)])


def test_a_task_a_pusher_took_holds_its_claims_under_the_pushers_holder_until_a_worker_starts(settings):
    row = make_schedule()
    claimed_at = timezone.now()
    [(schedule_id, token)] = schedules_claim(now=claimed_at)

    with time_machine.travel(claimed_at + timedelta(seconds=3), tick=False):
        _taken_by_a_pusher([(schedule_id, token)])
        row.refresh_from_db()
        pusher = row.claimed_by
        assert pusher.startswith(PUSHER) and pusher.endswith(token[-23:]) and len(pusher) == 32
        assert int(pusher[1:9], 16) == current.get().number  # this process's holder holds it
        assert row.lease_until == timezone.now() + timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
        assert others_waiting(tenants=[], now=timezone.now())  # taken by a pusher, not started
        assert schedules_claim(now=timezone.now()) == []

        taken = schedules_take(claims=[(schedule_id, token)], now=timezone.now())  # its worker
        assert list(taken) == [schedule_id] and taken[schedule_id].owner.startswith("h")
        assert not others_waiting(tenants=[], now=timezone.now())


def test_a_task_whose_function_hands_no_claims_leaves_them_queued():
    make_schedule()
    [(schedule_id, token)] = schedules_claim(now=timezone.now())

    _taken_by_a_pusher([(schedule_id, token)], func="deliveries.tasks.scan_daily")
    claims_prefetch([(2, "not a signed package")])

    assert DeliverySchedule.objects.get(pk=schedule_id).claimed_by == token


def test_the_claims_of_a_pusher_that_died_are_free_at_once():
    make_schedule()
    now = timezone.now()
    [(schedule_id, token)] = schedules_claim(now=now)
    with OtherHolder() as pusher:
        tail = token[-23:]
        DeliverySchedule.objects.filter(pk=schedule_id).update(
            claimed_by=holder_token(pusher.number, tail=tail, prefix=PUSHER),
            lease_until=now + timedelta(minutes=1),
        )
        assert schedules_claim(now=now) == []  # the pusher lives: its task will run

        pusher.die()
        [(again, _)] = schedules_claim(now=now)

    assert again == schedule_id

"""The retry policy's two schedules: the seed's for a channel call, seconds for Backlog."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from deliveries.retry import BACKLOG_BUDGET, backlog_budget_spent, backlog_delay, next_delay, writeback_delay
from deliveries.services import schedule_upsert
from tests.helpers.deliveries import make_schedule


def seconds(delay: timedelta) -> float:
    return delay.total_seconds()


def test_it_keeps_the_seeds_ladder_for_a_channel_call():
    assert [seconds(next_delay(n)) for n in range(5)] == [30, 120, 600, 1800, 3600]
    assert next_delay(5) is None


@pytest.mark.parametrize(
    ("failing_for", "low", "high"),
    [(0, 0.75, 1.25), (1, 0.75, 1.25), (2, 1.5, 2.5), (4, 3.0, 5.0), (8, 3.0, 5.0), (3600, 3.0, 5.0)],
)
def test_it_waits_about_as_long_as_backlog_has_failed_at_most_4_seconds_jittered(failing_for, low, high):
    delays = [seconds(backlog_delay(timedelta(seconds=failing_for))) for _ in range(200)]

    assert low <= min(delays) and max(delays) <= high
    assert max(delays) - min(delays) > (high - low) / 4  # jittered, not one fixed value


def test_it_waits_for_backlogs_rate_limit_reset():
    assert seconds(backlog_delay(timedelta(seconds=2), retry_after=40.0)) == 40.0


def test_it_spends_backlogs_budget_after_as_long_as_the_seeds_ladder_lasts():
    assert BACKLOG_BUDGET == timedelta(seconds=30 + 120 + 600 + 1800 + 3600)
    assert not backlog_budget_spent(BACKLOG_BUDGET - timedelta(seconds=1))
    assert backlog_budget_spent(BACKLOG_BUDGET)


def test_it_retries_a_write_back_to_an_unreachable_backlog_within_seconds_forever():
    delay = writeback_delay(40, retryable=True, failing_for=timedelta(hours=3))

    assert 3.0 <= seconds(delay) <= 5.0


def test_it_retries_a_write_back_backlog_refused_on_the_seeds_ladder():
    delays = [seconds(writeback_delay(n, retryable=False, failing_for=timedelta(0))) for n in range(7)]

    assert delays == [30, 120, 600, 1800, 3600, 3600, 3600]


def test_a_new_schedule_starts_backlogs_budget_afresh(db):
    schedule = make_schedule(attempts=2, backlog_failing_since=timezone.now() - timedelta(minutes=30))

    schedule_upsert(task=schedule.task, due_at=schedule.due_at, reason="approval")

    schedule.refresh_from_db()
    assert schedule.backlog_failing_since is None and schedule.attempts == 0

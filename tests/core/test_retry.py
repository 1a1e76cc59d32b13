"""The retry policy: one ladder per kind of work, and seconds on a budget for Backlog."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.retry import (
    BACKLOG_BUDGET,
    RETRY_LADDERS,
    backlog_budget_spent,
    backlog_delay,
    ladder_delay,
    max_attempts,
    next_retry_at,
    retry_delay,
    writeback_delay,
)

NOW = datetime(2026, 12, 10, 1, 0, tzinfo=UTC)


def seconds(delay: timedelta) -> float:
    return delay.total_seconds()


def test_it_keeps_the_seeds_ladder_for_a_channel_call():
    assert [seconds(retry_delay("delivery", n)) for n in range(1, 6)] == [30, 120, 600, 1800, 3600]
    assert retry_delay("delivery", 6) is None
    assert max_attempts("delivery") == 6


@pytest.mark.parametrize(
    ("kind", "waits", "attempts"),
    [
        ("line_push", [30, 60], 3),
        ("effect", [3600] * 4, 5),
        ("webhook_event", [10, 60, 300, 900], 5),
    ],
)
def test_each_kind_of_work_has_its_ladder_and_gives_up_after_it(kind, waits, attempts):
    steps = [retry_delay(kind, n) for n in range(1, attempts + 1)]

    assert [seconds(step) for step in steps[:-1]] == waits and steps[-1] is None
    assert max_attempts(kind) == attempts


def test_every_ladder_is_data_of_whole_seconds_growing_or_flat():
    for kind, ladder in RETRY_LADDERS.items():
        assert ladder and all(isinstance(step, int) and step > 0 for step in ladder), kind
        assert list(ladder) == sorted(ladder), kind


def test_a_retry_after_replaces_the_step_and_still_counts_as_an_attempt():
    assert seconds(retry_delay("delivery", 1, retry_after=7.0)) == 7.0
    assert seconds(retry_delay("line_push", 1, retry_after=90.0)) == 90.0
    assert seconds(retry_delay("line_push", 1, retry_after=0.0)) == 1.0  # at least a second
    assert retry_delay("line_push", 3, retry_after=7.0) is None


def test_it_tells_when_to_try_again_or_none_to_give_up():
    assert next_retry_at("webhook_event", 1, now=NOW) == NOW + timedelta(seconds=10)
    assert next_retry_at("webhook_event", 4, retry_after=5.0, now=NOW) == NOW + timedelta(seconds=5)
    assert next_retry_at("webhook_event", 5, now=NOW) is None


def test_work_retried_until_it_succeeds_stays_on_the_last_step():
    steps = [seconds(ladder_delay("delivery", n)) for n in range(1, 8)]

    assert steps == [30, 120, 600, 1800, 3600, 3600, 3600]


def test_an_unknown_kind_is_a_mistake_not_a_default():
    with pytest.raises(KeyError):
        retry_delay("fax", 1)


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
    delay = writeback_delay(41, retryable=True, failing_for=timedelta(hours=3))

    assert 3.0 <= seconds(delay) <= 5.0


def test_it_retries_a_write_back_backlog_refused_on_the_seeds_ladder():
    delays = [seconds(writeback_delay(n, retryable=False, failing_for=timedelta(0))) for n in range(1, 8)]

    assert delays == [30, 120, 600, 1800, 3600, 3600, 3600]

"""The chaos campaign's arithmetic (bench/chaos/accounting.py): what it prints is computed
from what the fakes recorded. The campaign itself is `make chaos`, not part of the suite."""

from __future__ import annotations

import random

import pytest

from bench.chaos.accounting import (
    Patch,
    Push,
    finished,
    kill_plan,
    outage_windows,
    percentile,
    tally,
)

GROUPS = {"BENCH-1": "C1", "BENCH-2": "C2", "BENCH-3": "C3", "BENCH-4": "C4"}
DUE = {"C1": 100.0, "C2": 110.0, "C3": 120.0, "C4": 130.0}


def test_it_counts_once_double_lost_and_the_lateness_of_the_first_accepted_push():
    pushes = [
        Push("C1", 100.5, accepted=True, status=200),
        Push("C2", 111.0, accepted=False, status=500),  # failed: sent nothing
        Push("C2", 141.0, accepted=True, status=200),
        Push("C3", 125.0, accepted=True, status=200),  # hung, then resent: 409, no second send
        Push("C3", 160.0, accepted=False, status=409),
        Push("C4", 190.0, accepted=True, status=200),  # two sends of one delivery: a double
        Push("C4", 131.0, accepted=True, status=200),
        Push("C9", 101.0, accepted=True, status=200),  # another group: not this campaign's
    ]
    patches = [
        Patch("BENCH-1", 200),
        Patch("BENCH-2", 503),
        Patch("BENCH-2", 200),
        Patch("BENCH-3", 200),
        Patch("BENCH-3", 200),
    ]

    result = tally("t", GROUPS, DUE, pushes, patches, killed=3)

    assert (result.n, result.delivered_once, result.double, result.lost) == (4, 3, 1, 0)
    assert (result.written_back_once, result.written_back_more) == (2, 1)
    assert result.lateness == [0.5, 1.0, 5.0, 31.0]  # C4 from its earlier push
    assert result.resent_409 == 1
    assert result.killed == 3


def test_it_counts_a_group_without_an_accepted_push_as_lost_and_prints_one_line():
    pushes = [Push("C1", 170.0, accepted=True, status=200), Push("C2", 111.0, accepted=False, status=500)]

    result = tally("kill-pg", GROUPS, DUE, pushes, [Patch("BENCH-1", 200)])
    line = result.line()

    assert (result.delivered_once, result.lost, result.double, result.over_late) == (1, 3, 0, 1)
    assert line.startswith(
        "kill-pg: 4 due | delivered once 1, lost 3, waiting for a retry 0, double 0 | written back once 1"
    )
    assert "lateness p50 70.00 s p99 70.00 s max 70.00 s, over 60 s 1 | killed 0" in line


def test_it_takes_nearest_rank_percentiles():
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) is None


def test_it_is_finished_only_when_every_group_was_pushed_and_every_issue_written_back():
    all_pushed = [Push(g, 0.0, accepted=True, status=200) for g in GROUPS.values()]
    all_written = [Patch(k, 200) for k in GROUPS]

    assert finished(GROUPS, all_pushed, all_written)
    assert not finished(GROUPS, all_pushed[:-1], all_written)
    assert not finished(GROUPS, all_pushed, [*all_written[:-1], Patch("BENCH-4", 503)])
    assert not finished(GROUPS, [*all_pushed[:-1], Push("C4", 0.0, accepted=False, status=500)], all_written)


def test_it_plans_the_same_kills_for_the_same_seed_about_every_period_roles_in_turn():
    targets = [["scheduler-1", "scheduler-2"], ["deliverer-1", "deliverer-2"]]

    plan = kill_plan(random.Random("15:kill-pg"), targets, count=7, every=8.0, jitter=2.0)
    again = kill_plan(random.Random("15:kill-pg"), targets, count=7, every=8.0, jitter=2.0)
    other = kill_plan(random.Random("16:kill-pg"), targets, count=7, every=8.0, jitter=2.0)

    assert plan == again != other
    offsets = [at for at, _ in plan]
    gaps = [b - a for a, b in zip([0.0, *offsets], offsets, strict=False)]
    assert len(plan) == 7 and all(6.0 <= gap <= 10.0 for gap in gaps)
    roles = [name.split("-")[0] for _, name in plan]
    assert roles[::2] == [roles[0]] * 4 and roles[1::2] == [roles[1]] * 3 and roles[0] != roles[1]
    assert {name for _, name in plan} <= {name for role in targets for name in role}


def test_it_plans_no_kill_without_targets():
    assert kill_plan(random.Random(1), [], count=3, every=8.0, jitter=2.0) == []


@pytest.mark.parametrize(
    ("until", "expected"),
    [
        (100.0, [(0.0, 20.0), (40.0, 60.0), (80.0, 100.0)]),
        (80.0, [(0.0, 20.0), (40.0, 60.0)]),
    ],
)
def test_it_lays_out_periodic_outage_windows(until, expected):
    assert outage_windows(0.0, every=40.0, down=20.0, until=until) == expected


def test_a_group_whose_row_waits_for_its_channel_retry_counts_as_waiting_not_lost():
    result = tally(
        "line-faults",
        {"A-1": "g1", "A-2": "g2", "A-3": "g3"},
        {"g1": 0.0, "g2": 1.0, "g3": 2.0},
        [],
        [],
    )
    result.count_waiting({"deliver retry due later": 2, "no schedule row": 1})

    assert (result.lost, result.waiting) == (1, 2)
    assert "lost 1, waiting for a retry 2," in result.line()

"""A deliverer's default workers: its share of the host's cores."""

from __future__ import annotations

import pytest

from automedia_site.workers import delivery_workers, host_cores


@pytest.mark.parametrize(
    ("deliverers", "cores", "workers"),
    [
        (1, 2, 4),  # one deliverer: more than 4 adds nothing, its tasks run their rows concurrently
        (2, 2, 4),
        (4, 2, 2),  # 8 workers on 2 cores, not 16
        (8, 2, 2),  # never fewer than 2
        (4, 4, 4),
        (3, 2, 2),
        (1, 1, 4),
        (0, 2, 4),  # a count of 0 reads as one
    ],
)
def test_the_deliverers_on_a_host_share_its_cores(deliverers, cores, workers):
    assert delivery_workers(deliverers=deliverers, cores=cores) == workers


def test_the_cores_are_those_this_process_may_run_on(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)

    assert host_cores() == 3


def test_without_cpu_affinity_the_machines_cores_count(monkeypatch):
    monkeypatch.delattr("os.sched_getaffinity", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)

    assert host_cores() == 6

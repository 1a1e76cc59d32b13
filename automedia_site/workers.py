"""How many worker processes a deliverer runs when DELIVERY_WORKERS is not set: its share of
the host's cores among the deliverers on it.

A send is mostly a wait on the network, so a core keeps several workers busy. Past a few
workers per core the processes only queue for the cores: a burst's sends start later, not
sooner. One deliverer gains nothing from more than MOST workers, because each of its tasks
already runs its rows concurrently (docs/benchmarks/history/delivery.md, chaos.md)."""

from __future__ import annotations

import os

WORKERS_PER_CORE = 4
FEWEST = 2  # one worker busy with a long task still leaves one for the next due second
MOST = 4


def host_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without CPU affinity
        return os.cpu_count() or 1


def delivery_workers(*, deliverers: int, cores: int) -> int:
    """Workers per deliverer when `deliverers` share `cores`: WORKERS_PER_CORE for each core
    shared evenly, between FEWEST and MOST."""
    share = WORKERS_PER_CORE * max(1, cores) // max(1, deliverers)
    return min(MOST, max(FEWEST, share))

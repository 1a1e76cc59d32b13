"""How fast this machine was when a benchmark ran: the same pure-Python loop each time.

Shared 2-core machines change speed from hour to hour (seen here: 0.6 to 1.8 s for the
loop below within one evening). A figure is comparable with another only beside this one;
before/after pairs are run alternately in one sitting.
"""

from __future__ import annotations

import time


def calibration() -> float:
    """Seconds for 10 million additions in pure Python."""
    started, total = time.perf_counter(), 0
    for i in range(10_000_000):
        total += i
    return round(time.perf_counter() - started, 2)

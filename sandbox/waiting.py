"""Waiting on real processes for as long as they make progress."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# A wait that keeps seeing progress still ends after this many times its stall timeout.
STALL_CEILING = 10


class StallError(AssertionError):
    """A wait saw no progress for its timeout (or ran to its ceiling)."""


@dataclass
class Waiter:
    """Polls a predicate; gives up only when `progress()` stops changing for `timeout` s.

    A busy machine makes the work slower, not wrong: a wait sized to one machine's speed
    fails on another while the work still advances."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    check: Callable[[], None] = field(default=lambda: None)
    """Called every poll: raises when waiting is pointless (a process died)."""

    def wait(
        self,
        predicate: Callable[[], object],
        timeout: float,
        interval: float,
        what: str,
        progress: Callable[[], object],
    ) -> None:
        start = last_change = self.clock()
        seen = progress()
        while not predicate():
            self.check()
            now, current = self.clock(), progress()
            if current != seen:
                seen, last_change = current, now
            if now - last_change >= timeout or now - start >= timeout * STALL_CEILING:
                raise StallError(
                    f"no progress for {now - last_change:.1f}s ({now - start:.1f}s in all) waiting for: {what}"
                )
            self.sleep(interval)

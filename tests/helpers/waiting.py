"""Waiting for an outcome in a test without a budget sized to one machine's speed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Only a wait that is surely stuck ends: a loaded machine is slow, never this slow.
STUCK_SECONDS = 30.0


def eventually(outcome: Callable[[], T], what: str, *, interval: float = 0.01) -> T:
    """Poll `outcome` until it is truthy and return it; fail (naming `what`) only when it
    has not come after STUCK_SECONDS."""
    deadline = time.monotonic() + STUCK_SECONDS
    while not (value := outcome()):
        assert time.monotonic() < deadline, f"still waiting after {STUCK_SECONDS:.0f}s for {what}"
        time.sleep(interval)
    return value

"""The retry policy (README "Delivery"): retries are new due times, never sleeps."""

from __future__ import annotations

from datetime import timedelta

# 5xx / timeout / connection error: 30 s, 2 min, 10 min, 30 min, 1 h, then automediaエラー.
BACKOFF_SECONDS = (30, 120, 600, 1800, 3600)
MAX_RETRIES = len(BACKOFF_SECONDS)


def next_delay(retries_so_far: int, retry_after: float | None = None) -> timedelta | None:
    """Delay before the next try, or None when the retries are used up.

    A 429's Retry-After is honoured and counts as one of the retries.
    """
    if retries_so_far >= MAX_RETRIES:
        return None
    seconds = retry_after if retry_after is not None else BACKOFF_SECONDS[retries_so_far]
    return timedelta(seconds=max(1.0, seconds))


def writeback_delay(retries_so_far: int) -> timedelta:
    """Backlog write-back is retried until it succeeds (the message is never resent)."""
    return timedelta(seconds=BACKOFF_SECONDS[min(retries_so_far, MAX_RETRIES - 1)])

"""The retry policy (README "Delivery"): retries are new due times, never sleeps.

Two schedules, because a Backlog failure is not a channel failure:
- the channel call (LINE, Instagram, …) follows the seed: 30 s, 2 min, 10 min, 30 min, 1 h;
- Backlog (the re-read before sending, and the write-back after it) is retried within
  seconds, so an outage of Backlog delays a delivery by about the outage, on a budget of
  its own that never uses up the channel's retries.
"""

from __future__ import annotations

import random
from datetime import timedelta

# 5xx / timeout / connection error: 30 s, 2 min, 10 min, 30 min, 1 h, then automediaエラー.
BACKOFF_SECONDS = (30, 120, 600, 1800, 3600)
MAX_RETRIES = len(BACKOFF_SECONDS)

# Backlog: wait about as long as it has been failing (1, 1, 2, 4 s …), at most BACKLOG_CAP,
# ± BACKLOG_JITTER so that the rows one outage stopped do not all come back at once. The cap
# bounds the lateness an outage adds beyond its own length: at most 5 s (4 s + 25 %) plus
# the failed call, so a 20 s outage leaves a delivery well within 30 s of its time.
BACKLOG_FIRST = 1.0
BACKLOG_CAP = 4.0
BACKLOG_JITTER = 0.25
# The re-read before sending gives up after as long as the seed's ladder gives any external
# call (30 s + 2 min + 10 min + 30 min + 1 h ≈ 1 h 42 min): a post is never later than a
# channel's retries could make it.
BACKLOG_BUDGET = timedelta(seconds=sum(BACKOFF_SECONDS))


def next_delay(retries_so_far: int, retry_after: float | None = None) -> timedelta | None:
    """Delay before the next try of a channel call, or None when the retries are used up.

    A 429's Retry-After is honoured and counts as one of the retries.
    """
    if retries_so_far >= MAX_RETRIES:
        return None
    seconds = retry_after if retry_after is not None else BACKOFF_SECONDS[retries_so_far]
    return timedelta(seconds=max(1.0, seconds))


def backlog_delay(failing_for: timedelta, retry_after: float | None = None) -> timedelta:
    """Delay before Backlog is tried again, when it has been failing for `failing_for`.

    Growing with the outage keeps a short blip cheap (1 s) and a long one bounded in load,
    while the cap means a delivery goes out within seconds of Backlog's return. A 429's
    reset time (X-RateLimit-Reset, https://developer.nulab.com/docs/backlog/rate-limit) is
    waited for.
    """
    seconds = min(BACKLOG_CAP, max(BACKLOG_FIRST, failing_for.total_seconds()))
    seconds *= random.uniform(1 - BACKLOG_JITTER, 1 + BACKLOG_JITTER)
    if retry_after is not None:
        seconds = max(seconds, retry_after)
    return timedelta(seconds=seconds)


def backlog_budget_spent(failing_for: timedelta) -> bool:
    return failing_for >= BACKLOG_BUDGET


def writeback_delay(
    retries_so_far: int, *, retryable: bool, failing_for: timedelta, retry_after: float | None = None
) -> timedelta:
    """The write-back is retried until Backlog accepts it (the message is never resent).

    An unreachable Backlog (5xx, timeout, 429) is tried again within seconds; a refusal
    (4xx, e.g. a status a manager has yet to add) waits on the seed's ladder, since trying
    every few seconds would change nothing.
    """
    if retryable:
        return backlog_delay(failing_for, retry_after)
    return timedelta(seconds=BACKOFF_SECONDS[min(retries_so_far, MAX_RETRIES - 1)])

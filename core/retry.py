"""How each kind of work is retried: a retry is a new due time, never a sleep.

A ladder lists the waits after the first, second, … failed attempt; once it is used up
the work gives up, so its last attempt is the ladder's length plus one. A Retry-After the
other side sends replaces the step (at least a second) and still counts as an attempt.
Backlog is retried on seconds instead, on a budget of its own (`backlog_delay`): an outage
of Backlog delays a delivery by about the outage and never uses up a channel's retries.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

RETRY_LADDERS: dict[str, tuple[int, ...]] = {
    # A channel call (LINE, Instagram, TikTok, HubSpot) on a 5xx, timeout or connection
    # error, the seed's ladder; then automediaエラー. Also a write-back Backlog refused.
    "delivery": (30, 120, 600, 1800, 3600),
    # A LINE group post (linepush) on a 5xx or timeout; then failed.
    "line_push": (30, 60),
    # An effect report's measurement and its Backlog comment.
    "effect": (3600, 3600, 3600, 3600),
    # A stored webhook event (Backlog or LINE) whose handler failed; then rejected.
    "webhook_event": (10, 60, 300, 900),
}

# Backlog: wait about as long as it has been failing (1, 1, 2, 4 s …), at most BACKLOG_CAP,
# ± BACKLOG_JITTER so that the rows one outage stopped do not all come back at once. The cap
# bounds the lateness an outage adds beyond its own length to the cap and its jitter plus
# the failed call.
BACKLOG_FIRST = 1.0
BACKLOG_CAP = 4.0
BACKLOG_JITTER = 0.25
# The re-read before sending gives up after as long as the delivery ladder gives a channel
# call: a post is never later than a channel's retries could make it.
BACKLOG_BUDGET = timedelta(seconds=sum(RETRY_LADDERS["delivery"]))


def max_attempts(kind: str) -> int:
    """The attempt after which `kind` gives up: the first try and one per step."""
    return len(RETRY_LADDERS[kind]) + 1


def retry_delay(kind: str, attempts: int, retry_after: float | None = None) -> timedelta | None:
    """The wait after `attempts` attempts failed (the first failure is 1); None when they
    are used up. A Retry-After the other side sent replaces the ladder's step."""
    ladder = RETRY_LADDERS[kind]
    if attempts > len(ladder):
        return None
    seconds = ladder[max(attempts, 1) - 1] if retry_after is None else retry_after
    return timedelta(seconds=max(1.0, seconds))


def next_retry_at(
    kind: str, attempts: int, retry_after: float | None = None, *, now: datetime
) -> datetime | None:
    """When to try `kind` again after `attempts` failed attempts; None: give up."""
    delay = retry_delay(kind, attempts, retry_after)
    return None if delay is None else now + delay


def ladder_delay(kind: str, attempts: int) -> timedelta:
    """The ladder's step for work retried until it succeeds: its last step once used up."""
    ladder = RETRY_LADDERS[kind]
    return timedelta(seconds=ladder[min(max(attempts, 1), len(ladder)) - 1])


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
    attempts: int, *, retryable: bool, failing_for: timedelta, retry_after: float | None = None
) -> timedelta:
    """The write-back is retried until Backlog accepts it (the message is never resent).

    An unreachable Backlog (5xx, timeout, 429) is tried again within seconds; a refusal
    (4xx, e.g. a status a manager has yet to add) waits on the delivery ladder, capped at
    its last step, since trying every few seconds would change nothing. `attempts`: the
    failed attempts so far, this one included.
    """
    if retryable:
        return backlog_delay(failing_for, retry_after)
    return ladder_delay("delivery", attempts)

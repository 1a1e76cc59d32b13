"""Pacing by Backlog's rate-limit headers, so that a long run of calls never draws a 429.

Backlog limits each user's calls per minute in groups (Read, Update, Search, Icon) and
answers every call with its group's `X-RateLimit-Limit`, `-Remaining` and `-Reset`
(https://developer.nulab.com/docs/backlog/rate-limit). Which GETs count as Search is not
listed, so the issue list has a budget of its own here. A paced client stops before a call
when its group's last answer left no more than the reserve (what other processes on the
same key still have): the call is refused with the wait until that answer's reset, for
its caller to give the work that due time; only the scan, a batch run of its own, waits
it out instead (`Pacer.waiting`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

logger = logging.getLogger(__name__)

RESET_MARGIN = 0.5  # seconds after the announced reset, for clock skew between us and Backlog
MAX_PACING_WAIT = 120.0  # a reset further away than this is a wrong header, not a window


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def rate_group(method: str, path: str) -> str:
    """The budget a call draws on (see the module docstring for `search`)."""
    if method != "GET":
        return "update"
    if path.rstrip("/") in ("/api/v2/issues", "/api/v2/issues/count"):
        return "search"
    return "read"


@dataclass
class Budget:
    limit: int
    remaining: int
    reset: float  # epoch seconds


def budget_from(headers: Mapping[str, str]) -> Budget | None:
    """The group's state from an answer; None without Remaining and Reset (nothing to pace by)."""
    try:
        return Budget(
            limit=int(headers.get("X-RateLimit-Limit") or 0),
            remaining=int(headers["X-RateLimit-Remaining"]),
            reset=float(headers["X-RateLimit-Reset"]),
        )
    except (KeyError, ValueError):
        return None


class Pacer:
    """The last known budget per group of one API key; `before` tells when it is spent.

    `reserve`: the share of each group's limit left to other users of the key.
    `clock`: time.time unless given. `sleep`: given, a spent budget is waited out with it
    before the call; None, the call is refused with the wait.
    """

    def __init__(
        self,
        *,
        reserve: float = 0.1,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.reserve = reserve
        self._clock, self._sleep = clock or time.time, sleep
        self._budgets: dict[str, Budget] = {}
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds slept so far (reported by the scan)

    @classmethod
    def waiting(cls) -> Pacer:
        """A pacer that waits for the window to restart: for the scan, a run of thousands of
        calls in a process of its own, never for a request or a worker's row."""
        return cls(sleep=_sleep)

    def before(self, group: str) -> float:
        """0 when a call of `group` may go now. A budget down to the reserve is waited out
        with `sleep` (then 0); without it, the seconds until the window restarts."""
        if self._sleep is None:
            return self.wait_needed(group)
        wait = self._wait_for(group)
        if wait > 0:
            logger.info("backlog %s budget spent: waiting %.1fs for the rate-limit reset", group, wait)
            self._sleep(wait)
            self.waited += wait
        return 0.0

    def wait_needed(self, group: str) -> float:
        """Seconds until the group's window restarts if its budget is down to the reserve, else
        0; unlike `before`, for a caller that does something else than sleep meanwhile."""
        with self._lock:
            budget = self._budgets.get(group)
            if budget is None or budget.remaining > int(budget.limit * self.reserve):
                return 0.0
            return max(0.0, min(budget.reset + RESET_MARGIN - self._clock(), MAX_PACING_WAIT))

    def after(self, group: str, headers: Mapping[str, str]) -> None:
        budget = budget_from(headers)
        if budget is not None:
            with self._lock:
                self._budgets[group] = budget

    def _wait_for(self, group: str) -> float:
        with self._lock:
            budget = self._budgets.get(group)
            if budget is None or budget.remaining > int(budget.limit * self.reserve):
                return 0.0
            wait = budget.reset + RESET_MARGIN - self._clock()
            if wait > 0:
                # Spent: the next answer (after the reset) tells the new budget.
                self._budgets.pop(group)
        return min(wait, MAX_PACING_WAIT)

"""Calls in lanes: one lane per key (a Backlog user) runs its calls in series, in the order
given; lanes run side by side on a few threads, taking turns, so a lane with many calls
never holds back another's. The scheduler's read-ahead of Backlog runs here
(deliveries/prepare/ahead.py), off the default queue and off the deliverers.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor

from core import keeper
from core.db import connection_release
from core.keeper import ConnectionCheck

logger = logging.getLogger(__name__)


class Lanes:
    """`submit(key, call)`: `call()` after the calls of `key` submitted before it. A lane runs
    one call per turn and queues its next turn behind the other lanes' (round robin)."""

    def __init__(self, *, threads: int, name: str = "lane") -> None:
        self.threads, self.name = threads, name
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._waiting: dict[Hashable, deque[Callable[[], object]]] = {}
        self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=self.name)
        self._checks = threading.local()

    def submit(self, key: Hashable, call: Callable[[], object]) -> None:
        if not keeper.THREADS:  # tests: at once, on the test's connection
            self._run(call)
            return
        if os.getpid() != self._pid:  # a forked child: the parent's threads are not here
            self._reset()
        with self._lock:
            lane = self._waiting.get(key)
            if lane is not None:  # running or queued: it takes this call in its turn
                lane.append(call)
                return
            self._waiting[key] = deque([call])
        self._executor.submit(self._turn, key)

    def busy(self) -> int:
        """Lanes with calls running or waiting."""
        with self._lock:
            return len(self._waiting)

    def _turn(self, key: Hashable) -> None:
        with self._lock:
            call = self._waiting[key][0]
        self._run(call)
        with self._lock:
            lane = self._waiting[key]
            lane.popleft()
            if not lane:
                del self._waiting[key]
                return
        self._executor.submit(self._turn, key)  # behind the turns the other lanes queued

    def _run(self, call: Callable[[], object]) -> None:
        try:
            if keeper.THREADS:
                self._check()
            call()
        except Exception:
            logger.exception("%s: a call failed", self.name)
        finally:
            connection_release()  # with a connection pool: back to it between turns

    def _check(self) -> None:
        check = getattr(self._checks, "check", None)
        if check is None:
            check = self._checks.check = ConnectionCheck()  # this thread's connection
        check()

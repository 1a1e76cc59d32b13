"""core/lanes.py: one key's calls in series and in order, keys taking turns on few threads."""

from __future__ import annotations

import threading

import pytest

from core import keeper
from core.lanes import Lanes
from tests.helpers.waiting import STUCK_SECONDS


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(keeper, "THREADS", True)  # the suite runs calls inline


def recorder(order: list, name: str, gate: threading.Event | None = None):
    def call() -> None:
        if gate is not None:
            gate.wait(5)
        order.append(name)

    return call


def drained(lanes: Lanes) -> bool:
    """Every lane's calls ran (waits at most 5 s)."""
    done = threading.Event()

    def check() -> None:
        if lanes.busy() > 1:  # others still run: look again behind them
            lanes.submit(object(), check)
        else:
            done.set()

    lanes.submit(object(), check)
    return done.wait(5)


@pytest.mark.usefixtures("threads")
def test_a_lane_with_many_calls_takes_turns_with_another():
    lanes, order, gate = Lanes(threads=1), [], threading.Event()
    lanes.submit("a", recorder(order, "a1", gate))  # holds the only thread until the rest are queued
    for name in ("a2", "a3"):
        lanes.submit("a", recorder(order, name))
    lanes.submit("b", recorder(order, "b1"))
    gate.set()

    assert drained(lanes)
    assert order[:4] == ["a1", "b1", "a2", "a3"]


@pytest.mark.usefixtures("threads")
def test_one_keys_calls_never_overlap_while_other_keys_run_beside_them():
    lanes, lock = Lanes(threads=4), threading.Lock()
    running: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}
    both = threading.Barrier(2, timeout=STUCK_SECONDS)  # a's first call and b's first call meet: side by side

    def call(key: str, meet: bool):
        def run() -> None:
            with lock:
                running[key] += 1
                most[key] = max(most[key], running[key])
            if meet:
                both.wait()
            with lock:
                running[key] -= 1

        return run

    for i in range(5):
        lanes.submit("a", call("a", i == 0))
        lanes.submit("b", call("b", i == 0))

    assert drained(lanes)
    assert most == {"a": 1, "b": 1} and not both.broken


@pytest.mark.usefixtures("threads")
def test_a_call_that_raises_leaves_its_lane_running(caplog):
    lanes, order = Lanes(threads=1), []

    def fails() -> None:
        raise RuntimeError("Backlog said no")

    lanes.submit("a", fails)
    lanes.submit("a", recorder(order, "a2"))

    assert drained(lanes)
    assert order == ["a2"] and "a call failed" in caplog.text


def test_without_threads_a_call_runs_at_once():
    order: list[str] = []

    Lanes(threads=1).submit("a", recorder(order, "a1"))

    assert order == ["a1"]

"""sandbox/stack.py's process bookkeeping, without a database: what the chaos campaign's
supervisor relies on to restart a process."""

from __future__ import annotations

import errno
import os
import socket
import sys

import pytest

from sandbox.stack import Stack


def test_it_tells_a_running_process_from_a_killed_or_never_spawned_one(tmp_path):
    stack = Stack(tmp_dir=tmp_path)
    stack._env = {"PATH": os.environ.get("PATH", "")}  # not started: no database, no fakes needed
    stack._launch("sleeper", [sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        running_before = stack.running("sleeper")
        stack.kill("sleeper")

        assert running_before
        assert not stack.running("sleeper")
        assert not stack.running("never-spawned")
    finally:
        stack.stop()


def test_its_web_port_is_held_from_the_start_so_no_other_socket_can_take_it(tmp_path):
    stack = Stack(tmp_dir=tmp_path)
    try:
        with socket.socket() as other, pytest.raises(OSError) as taken:
            other.bind(("127.0.0.1", stack.web_port))  # what an outbound connection's local port does
        assert taken.value.errno == errno.EADDRINUSE
    finally:
        stack.stop()

    with socket.socket() as other:  # given back when the stack stops
        other.bind(("127.0.0.1", stack.web_port))


class _Clock:
    """A fake clock for wait_for: each sleep moves it on, nothing really waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _waiting_stack(tmp_path) -> tuple[Stack, _Clock]:
    stack = Stack(tmp_dir=tmp_path)
    clock = _Clock()
    stack.waiter.clock, stack.waiter.sleep = clock, clock.sleep
    return stack, clock


def test_a_wait_that_keeps_making_progress_outlasts_its_timeout(tmp_path):
    stack, clock = _waiting_stack(tmp_path)
    done = []
    try:
        # One more item every 4 s against a 5 s stall timeout: 30 s in all, never stuck.
        stack.wait_for(
            lambda: clock.now >= 30,
            timeout=5,
            interval=1,
            message="30 items",
            progress=lambda: int(clock.now // 4),
        )
        done.append(clock.now)
    finally:
        stack.stop()

    assert done == [30]


def test_a_wait_fails_after_its_timeout_without_progress(tmp_path):
    stack, clock = _waiting_stack(tmp_path)
    try:
        with pytest.raises(
            AssertionError, match=r"no progress for 5\.0s \(5\.0s in all\) waiting for: nothing"
        ):
            stack.wait_for(lambda: False, timeout=5, interval=1, message="nothing", progress=lambda: 0)
    finally:
        stack.stop()


def test_a_wait_that_stalls_after_some_progress_fails_a_timeout_after_the_last(tmp_path):
    stack, clock = _waiting_stack(tmp_path)
    try:
        with pytest.raises(AssertionError, match=r"no progress for 5\.0s \(12\.0s in all\)"):
            stack.wait_for(lambda: False, timeout=5, interval=1, progress=lambda: min(clock.now, 7))
    finally:
        stack.stop()


def test_a_wait_ends_at_its_ceiling_however_much_progress_it_sees(tmp_path):
    stack, clock = _waiting_stack(tmp_path)
    try:
        with pytest.raises(AssertionError, match=r"\(50\.0s in all\)"):
            stack.wait_for(lambda: False, timeout=5, interval=1, progress=lambda: clock.now)
    finally:
        stack.stop()


def test_by_default_what_the_processes_log_is_progress(tmp_path):
    stack, clock = _waiting_stack(tmp_path)
    log = stack.log_path("worker")
    stack._processes["worker"] = None  # bookkeeping only: activity() reads its log,
    stack._killed.add("worker")  # and no liveness check looks at the process

    def a_line_every_other_second() -> bool:
        if int(clock.now) % 2 == 0:
            with log.open("a") as f:
                f.write("a task done\n")
        return clock.now >= 20

    try:
        stack.wait_for(a_line_every_other_second, timeout=3, interval=1)
        assert clock.now == 20
    finally:
        stack._processes.clear()
        stack.stop()

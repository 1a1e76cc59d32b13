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

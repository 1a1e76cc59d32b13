"""CPU seconds of processes, read from Linux's /proc: what the Stack's processes and the
database server have used so far (the benchmarks subtract two readings)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system, with reaped children) used so far by the live processes of
    process group `pgid`."""
    # fields[0] is the state; pgrp is the 5th field of stat
    return sum(_cpu_of(fields) for _, fields in _proc_stats() if int(fields[2]) == pgid)


def named_cpu_seconds(command: str) -> float:
    """CPU time used so far by every live process whose command name is `command` (e.g. the
    PostgreSQL server's backends, `postgres`), whoever started them."""
    return sum(_cpu_of(fields) for name, fields in _proc_stats() if name == command)


def _proc_stats() -> Iterator[tuple[str, list[str]]]:
    """(command name, /proc/<pid>/stat fields after it) of every live process."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        yield text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()


def _cpu_of(fields: list[str]) -> float:
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])  # stat fields 14-17
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")

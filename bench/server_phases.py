"""Where the PostgreSQL server's CPU goes: its samples in a machine profile, by phase.

`.venv/bin/python bench/server_phases.py DIR/postgresql-machine.perf [more.perf]`
(the files of `bench/delivery.py --database postgres --profile-machine DIR`).

Each sample of a process named `postgres` is put in the first phase, in PHASES' order,
one of whose functions is on its call stack: a connection's start, the commit's deferred
foreign-key checks and WAL flush, planning, parsing, executing, reading from and writing
to the client. Samples with none of them (the kernel's work for the process, frames perf
could not unwind) are counted apart. Needs Linux perf (`perf script`).
"""

from __future__ import annotations

import argparse
import subprocess
from collections import Counter
from collections.abc import Iterable

# (phase, functions): the first phase with a function on the stack takes the sample, so a
# commit's foreign-key checks (which plan and execute their own queries) count as commit.
PHASES: list[tuple[str, tuple[str, ...]]] = [
    (
        "connection start",
        ("BackendStartup", "fork_process", "_Fork", "InitPostgres", "PerformAuthentication"),
    ),
    ("commit: deferred foreign-key checks", ("AfterTriggerFireDeferred",)),
    ("commit: WAL flush", ("XLogFlush",)),
    ("commit: the rest", ("CommitTransactionCommand",)),
    ("plan", ("pg_plan_queries", "standard_planner")),
    (
        "parse and analyze",
        ("pg_parse_query", "raw_parser", "parse_analyze_fixedparams", "pg_analyze_and_rewrite_fixedparams"),
    ),
    (
        "execute",
        ("PortalRun", "PortalStart", "standard_ExecutorRun", "standard_ExecutorStart", "ExecutorEnd"),
    ),
    ("client read and write", ("pq_getbyte", "pq_getmessage", "secure_read", "secure_write", "pq_flush")),
    ("start transaction", ("StartTransactionCommand",)),
]
UNMATCHED = "none of these (kernel work, frames not unwound)"


def samples(script: str) -> Iterable[list[str]]:
    """The call stacks (function names, innermost first) of `perf script -F comm,ip,sym`'s
    output: one block per sample, a header line, then one `address function` line per frame."""
    for block in script.split("\n\n"):
        lines = block.strip().splitlines()
        if lines:
            yield [line.split(maxsplit=1)[-1] for line in lines[1:]]


def phase(stack: list[str]) -> str:
    functions = set(stack)
    for name, markers in PHASES:
        if functions.intersection(markers):
            return name
    return UNMATCHED


def server_phases(script: str) -> Counter:
    return Counter(phase(stack) for stack in samples(script))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="perf.data files of bench/delivery.py --profile-machine")
    args = parser.parse_args()
    for path in args.files:
        script = subprocess.run(
            ["perf", "script", "--input", path, "--comms", "postgres", "--fields", "comm,ip,sym"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        counts = server_phases(script)
        total = sum(counts.values())
        print(f"{path}: {total} samples of the PostgreSQL server")
        for name, n in counts.most_common():
            print(f"  {name:<48} {100 * n / max(total, 1):5.1f} %")


if __name__ == "__main__":
    main()

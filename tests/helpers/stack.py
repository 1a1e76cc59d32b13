"""Driving a Stack (sandbox/stack.py) in the e2e tests: its processes, the tenant "e2e" on
project E2E, and what its fake Backlog saw."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from core.timeutil import JST
from sandbox.backlog import RecordedRequest
from sandbox.postgres import is_postgres
from sandbox.stack import Stack

PROJECT = "E2E"
RESERVED = re.compile(r"\[automedia\] 配信を予約しました: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \(JST\)")
# Either comment says the approval is registered: reserved ahead, or its 投稿日時 passed
# while it waited in line and it goes out now.
REGISTERED = re.compile(
    r"\[automedia\] (配信を予約しました|投稿日時 .* を過ぎているため、今すぐ配信します): "
)
DISPATCHED = "[automedia] 配信しました: "


def whole_seconds_from_now(seconds: float) -> datetime:
    return (datetime.now(JST) + timedelta(seconds=seconds)).replace(microsecond=0)


def patches(stack: Stack, key: str | None = None) -> list[RecordedRequest]:
    """PATCHes of one issue (or of every issue) that the fake Backlog answered."""
    paths = [r for r in list(stack.backlog.requests) if r.method == "PATCH"]
    if key is None:
        return [r for r in paths if r.path.startswith("/api/v2/issues/")]
    return [r for r in paths if r.path == f"/api/v2/issues/{key}"]


def successful_patches(stack: Stack, key: str | None = None) -> list[RecordedRequest]:
    return [r for r in patches(stack, key) if r.status == 200]


def comments(stack: Stack, key: str) -> list[str]:
    return [c["content"] for c in stack.backlog.comments(key) if c["content"]]


def reserved_for(stack: Stack, key: str) -> datetime | None:
    """The due time automedia announced in its reservation comment."""
    for text in comments(stack, key):
        match = RESERVED.match(text)
        if match:
            return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=JST)
    return None


def start_workers(stack: Stack, *names: str) -> None:
    """Each name is a deliveries qcluster (the Procfile's `deliverer`) plus a default-queue
    qcluster for webhook processing named `<name>-events`. Tasks wait in the broker until
    they run."""
    for name in names:
        stack.spawn(name, "qcluster", env={"Q_CLUSTER_NAME": "deliveries"})
        stack.spawn(f"{name}-events", "qcluster")


def start_schedulers(stack: Stack, *names: str) -> None:
    for name in names:
        stack.spawn(name, "run_scheduler")
    for name in names:
        stack.wait_for_log(name, "started")


STANDARD_PLAN = (
    "from core.models import Tenant; from line.models import LinePlan, LinePushSettings\n"
    "for t in Tenant.objects.all():\n"
    "    LinePushSettings.objects.update_or_create(tenant=t, defaults={'plan': LinePlan.objects.get(code='standard')})"
)


def e2e_postgres_url(purpose: str) -> str:
    """A PostgreSQL database of this test run's own: a second suite running beside it (another
    checkout, or the same one) never drops the database under this one's processes."""
    return f"postgres://postgres@127.0.0.1:5432/automedia_e2e_{purpose}_{os.getpid()}"


@contextlib.contextmanager
def postgres_turn() -> Iterator[None]:
    """One PostgreSQL stack at a time on this machine, whichever test run starts it: a stack
    of several qclusters and schedulers holds most of a default server's 100 connections,
    so a second suite running beside this one waits for its turn rather than finding the
    server full."""
    path = Path(tempfile.gettempdir()) / f"automedia-e2e-postgres-{os.getuid()}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the holder's stack makes progress or its test fails
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def running_stack(tmp_path: Path, **options) -> Iterator[Stack]:
    """A started stack with the tenant "e2e" on project E2E; a failure prints the process logs.

    The database follows the suite's: when `make test` runs on PostgreSQL (DATABASE_URL),
    so do the processes, on a database of their own."""
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        options.setdefault("database_url", e2e_postgres_url("run"))
    options.setdefault("backlog_latency", 0)  # the tests' speed; the benchmarks keep Backlog's own
    postgres = is_postgres(options.get("database_url") or "")
    with (
        postgres_turn() if postgres else contextlib.nullcontext(),
        Stack(tmp_dir=tmp_path, **options) as stack,
    ):
        stack.add_tenant(project=PROJECT)
        # スタンダードプラン: the approval-time quota forecast must not refuse the many
        # approvals of a test (the free plan a tenant starts on allows 200 messages a month).
        stack.shell(STANDARD_PLAN)
        yield stack

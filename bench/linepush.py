"""LINE group-push benchmark: drain N queued posts across G groups through the real processes.

`make bench-linepush` (or `.venv/bin/python bench/linepush.py --help`). It starts the
stack of sandbox/stack.py on a throwaway database (SQLite in a temp dir,
or the PostgreSQL database given by `--database-url`, dropped and created): gunicorn,
`run_scheduler`, and a `qcluster` for the deliveries queue, with the fake LINE on
loopback in this process. Then:

1. Throughput: G groups (opted in, per-group limit raised to `--group-limit` per 5 min,
   2 members each, plan スタンダード) and N `task_approved` items are written while
   nothing is due, then made due at once (one UPDATE). The clock runs from that UPDATE
   to the moment the fake LINE accepted the last push. Checked afterwards: every item
   `sent`, each retry key accepted exactly once, no push beyond N.
2. Rate limit: one more group with the default limit (3 per 5 min) gets 4 items due
   now; the first three are accepted and the fourth ends `failed` with its last_error,
   and is not retried.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import calibration  # noqa: E402
from sandbox.stack import Stack  # noqa: E402

PUSH = "/v2/bot/message/push"
TARGET_PER_S = 1500.0  # on PostgreSQL

SEED = """
import json
import uuid
from datetime import timedelta
from django.db import connection
from django.utils import timezone
from core.models import Tenant
from line.models import LinePlan, LinePushSettings, LineSource
from linepush.models import LinePushItem
tenant = Tenant.objects.get(slug="bench")
LinePushSettings.objects.update_or_create(tenant=tenant, defaults={{"plan": LinePlan.objects.get(code="standard")}})
groups = [f"C{{n:032x}}" for n in range({groups})]
LineSource.objects.bulk_create([
    LineSource(tenant=tenant, group_id=g, name=f"グループ {{i}}", allow_outbound_push=True,
               push_opt_in_triggers=["task_approved"], member_count=2, rate_limit_count={group_limit})
    for i, g in enumerate(groups)
])
later = timezone.now() + timedelta(days=1)
LinePushItem.objects.bulk_create([
    LinePushItem(tenant=tenant, ext_group_id=groups[i % len(groups)], trigger_type="task_approved",
                 payload=[{{"type": "text", "text": f"タスクを承りました #{{i}}"}}], dedupe_key=f"bench:{{i}}",
                 retry_key=str(uuid.uuid4()), source_table="bench", source_id=str(i), scheduled_at=later, status="pending")
    for i in range({items})
], batch_size=1000)
# The planner's statistics, as a table filled over days has them (autovacuum would take up to
# a minute to notice 10,000 rows inserted at once): without them PostgreSQL takes the table
# for empty and sorts every due row on every claim.
with connection.cursor() as cursor:
    cursor.execute("ANALYZE linepush_linepushitem")
print(LinePushItem.objects.count())
"""

RELEASE = """
from django.utils import timezone
from linepush.models import LinePushItem
now = timezone.now()
LinePushItem.objects.filter(tenant__slug="bench", dedupe_key__startswith="bench:").update(scheduled_at=now)
print(now.timestamp())
"""

STATUS = """
import json
from django.db.models import Count
from linepush.models import LinePushAttempt, LinePushItem
items = LinePushItem.objects.filter(tenant__slug="bench", dedupe_key__startswith="{prefix}")
print(json.dumps({{
    "status": {{r["status"]: r["n"] for r in items.values("status").annotate(n=Count("id"))}},
    "attempts": {{r["outcome"]: r["n"] for r in LinePushAttempt.objects.filter(item__in=items).values("outcome").annotate(n=Count("id"))}},
    "errors": sorted({{e for e in items.exclude(last_error="").values_list("last_error", flat=True)}}),
}}, ensure_ascii=False))
"""

RATE_LIMIT = """
from django.utils import timezone
from core.models import Tenant
from line.models import LineSource
from linepush.services import push_enqueue
tenant = Tenant.objects.get(slug="bench")
LineSource.objects.create(tenant=tenant, group_id="C{group}", allow_outbound_push=True,
                          push_opt_in_triggers=["reminder"], member_count=2)
for n in range(4):
    push_enqueue(tenant=tenant, ext_group_id="C{group}", trigger_type="reminder",
                 payload=[{{"type": "text", "text": f"明日 10:00 撮影 ({{n}})"}}], dedupe_key=f"limit:{{n}}",
                 scheduled_at=timezone.now())
"""


@dataclass
class Result:
    database: str
    items: int
    groups: int
    workers: int
    scheduler_batch: int | str
    drain_s: float
    pushes_per_s: float
    first_push_after_s: float
    accepted: int
    duplicates_409: int
    max_accepts_per_key: int
    machine_loop_s: str  # bench/machine.py at the start and the end
    statuses: dict
    cpu_s: dict
    cpu_ms_per_push: float
    load: str
    rate_limit_sent: int
    rate_limit_statuses: dict
    rate_limit_error: str
    target_met: bool


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--group-limit", type=int, default=100, help="per-group limit for the throughput run")
    parser.add_argument(
        "--workers", type=int, default=2, help="workers of the deliveries qcluster (DELIVERY_WORKERS)"
    )
    parser.add_argument(
        "--batch", type=int, default=None, help="run_scheduler --batch (default: its own, SCHEDULER_BATCH)"
    )
    parser.add_argument(
        "--database-url", default="", help="PostgreSQL URL (dropped and created); default SQLite"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every process; repeat")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return parser.parse_args()


def shell_json(stack: Stack, code: str) -> dict:
    return json.loads(stack.shell(code).splitlines()[-1])


class PostgresCpu:
    """CPU seconds of the PostgreSQL server's backends for the bench database (the server
    runs on this machine: Linux /proc). A thread lists them every 0.2 s in pg_stat_activity;
    a backend's CPU counts from its first sighting (0 for one born during the drain), until
    its last (one that exits between two looks loses at most 0.2 s)."""

    def __init__(self, url: str) -> None:
        import psycopg

        parts = urlsplit(url)
        self._name = parts.path.lstrip("/")
        admin = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
        self._conn = psycopg.connect(admin, autocommit=True)
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._started = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="postgres-cpu", daemon=True)

    def start(self) -> None:
        self._look()
        self._started = True
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._look()
        self._conn.close()
        return sum(self._last[pid] - self._first[pid] for pid in self._last)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._look()

    def _look(self) -> None:
        pids = [
            row[0]
            for row in self._conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [self._name])
        ]
        for pid in pids:
            used = _proc_cpu(pid)
            if used is None:
                continue
            self._first.setdefault(pid, used if not self._started else 0.0)
            self._last[pid] = used


def _proc_cpu(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(stack: Stack, args: argparse.Namespace) -> dict:
    seeded = stack.shell(SEED.format(groups=args.groups, items=args.items, group_limit=args.group_limit))
    assert int(seeded.splitlines()[-1]) == args.items, seeded
    stack.spawn("deliverer", "qcluster", env={"Q_CLUSTER_NAME": "deliveries"})
    stack.spawn("scheduler", "run_scheduler", *(["--batch", str(args.batch)] if args.batch else []))
    time.sleep(3)  # let the cluster's workers start before the clock does
    load = os.getloadavg()[0]
    postgres = PostgresCpu(args.database_url) if args.database_url else None
    cpu_before = _cpu(stack)
    if postgres:
        postgres.start()
    released = float(stack.shell(RELEASE).splitlines()[-1])
    stack.wait_for(lambda: _accepted(stack) >= args.items, args.timeout, 0.2, f"{args.items} pushes")
    cpu = {name: round(used - cpu_before[name], 1) for name, used in _cpu(stack).items()}
    if postgres:
        cpu["postgres"] = round(postgres.stop(), 1)
    time.sleep(1.0)  # anything sent twice would show up now
    pushes = [r for r in stack.line.requests if r.path == PUSH]
    accepted = [r for r in pushes if r.accepted]
    last, first = max(r.received_at for r in accepted), min(r.received_at for r in accepted)
    stack.wait_for(lambda: _open(stack, "bench:") == 0, 60, 0.5, "every item recorded")
    keys = Counter(r.headers["x-line-retry-key"] for r in accepted)
    return {
        "drain_s": round(last - released, 2),
        "pushes_per_s": round(args.items / (last - released), 1),
        "first_push_after_s": round(first - released, 3),
        "accepted": len(accepted),
        "duplicates_409": sum(1 for r in pushes if r.status == 409),
        "max_accepts_per_key": max(keys.values()),
        "statuses": shell_json(stack, STATUS.format(prefix="bench:"))["status"],
        "cpu_s": cpu,
        "cpu_ms_per_push": round(sum(cpu.values()) * 1000 / args.items, 2),
        "load": f"{load:.1f} → {os.getloadavg()[0]:.1f}",
    }


def _cpu(stack: Stack) -> dict[str, float]:
    """CPU seconds so far: the scheduler, the deliveries qcluster (all its processes) and
    this process (the fake LINE's threads, plus the polling of this script)."""
    used = {name: stack.cpu_seconds(name) for name in ("scheduler", "deliverer")}
    times = os.times()
    return used | {"bench+fake_line": times.user + times.system}


def _accepted(stack: Stack) -> int:
    return sum(1 for r in stack.line.requests if r.path == PUSH and r.accepted)


def _open(stack: Stack, prefix: str) -> int:
    counts = shell_json(stack, STATUS.format(prefix=prefix))["status"]
    return sum(n for status, n in counts.items() if status in ("pending", "waiting_approval", "held"))


def rate_limit(stack: Stack) -> dict:
    group = "f" * 32
    before = _accepted(stack)
    stack.shell(RATE_LIMIT.format(group=group))
    stack.wait_for(lambda: _open(stack, "limit:") == 0, 30, 0.2, "the rate-limit items decided")
    time.sleep(2.0)  # a resend loop would show up as more pushes
    sent = [r for r in stack.line.requests if r.path == PUSH and r.accepted and r.body["to"] == f"C{group}"]
    report = shell_json(stack, STATUS.format(prefix="limit:"))
    assert _accepted(stack) - before == len(sent)
    return {
        "rate_limit_sent": len(sent),
        "rate_limit_statuses": report["status"],
        "rate_limit_error": " | ".join(report["errors"]),
    }


def main() -> None:
    args = parse_args()
    database = "PostgreSQL" if args.database_url else "SQLite (WAL)"
    env = {"DELIVERY_WORKERS": str(args.workers), "LOG_LEVEL": "WARNING", "DJANGO_Q_LOG_LEVEL": "WARNING"}
    env |= dict(pair.split("=", 1) for pair in args.env)
    speed = calibration()
    with tempfile.TemporaryDirectory(prefix="bench-linepush-") as tmp:
        with Stack(tmp_dir=Path(tmp), database_url=args.database_url or None, env=env) as stack:
            stack.add_tenant("bench", "BENCH")
            drained = throughput(stack, args)
            limited = rate_limit(stack)
    result = Result(
        database=database,
        items=args.items,
        groups=args.groups,
        workers=args.workers,
        scheduler_batch=args.batch or "default",
        target_met=drained["pushes_per_s"] >= TARGET_PER_S,
        machine_loop_s=f"{speed} → {calibration()}",
        **drained,
        **limited,
    )
    if args.json:
        print(json.dumps(asdict(result), ensure_ascii=False))
        return
    print(f"linepush bench {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {database}")
    for key, value in asdict(result).items():
        print(f"  {key:22} {value}")
    verdict = "met" if result.target_met else "MISSED"
    print(f"target ≥ {TARGET_PER_S:.0f} pushes/s: {verdict}")


if __name__ == "__main__":
    main()

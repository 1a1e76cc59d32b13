"""Approval benchmark: a manager's move to automedia承認 -> automedia's reservation comment.

`make bench-approval` (or `.venv/bin/python bench/approval.py --help`). The Procfile's
processes (gunicorn web, worker, deliverer, scheduler) run against the fake Backlog on
loopback, as in bench/delivery.py. Each approval is made alone, after the one before has
its comment: the issue is written first (its own webhook processed), then moved to
automedia承認. Latency = when the fake Backlog received automedia's reservation comment −
when the status change was made. In between: the fake posts the webhook, the web stores it
and enqueues its processing on the default queue, the worker takes it, re-reads the issue
and registers the schedule, then posts the comment.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.delivery import (  # noqa: E402
    ENV,
    PROJECT,
    PUBLISH_LEAD,
    SLUG,
    is_reservation,
    issue_body,
    new_group,
    percentile,
    redis_flush,
    standard_plan,
    start_processes,
)
from bench.machine import calibration  # noqa: E402
from core.timeutil import JST  # noqa: E402
from sandbox.stack import Stack  # noqa: E402

POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/automedia_bench_approval"
SETTLE_S = 0.3  # after writing an issue: its creation webhook processed before the approval
TIMEOUT_S = 30.0


@dataclass
class Result:
    setup: str
    approvals: int
    p50_ms: float
    p90_ms: float
    max_ms: float
    mean_ms: float


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approvals", type=int, default=40, help="approvals measured per setup")
    parser.add_argument("--warmup", type=int, default=3, help="uncounted approvals first")
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgres", "all"],
        default="all",
        help="all (default): SQLite + ORM broker, PostgreSQL + ORM broker, PostgreSQL + Redis",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    return parser.parse_args()


def comment_received(stack: Stack, key: str) -> float | None:
    """When the fake Backlog received automedia's reservation comment on `key`."""
    suffix = f"/issues/{key}/comments"
    return next(
        (
            r.received_at
            for r in list(stack.backlog.requests)
            if is_reservation(r) and r.path.endswith(suffix)
        ),
        None,
    )


def approve_one(stack: Stack, template: str) -> float:
    """One issue written, then approved; seconds from the approval to the reservation comment."""
    publish_at = (datetime.now(JST) + PUBLISH_LEAD).replace(microsecond=0)
    body = issue_body(publish_at=publish_at, group=new_group(), template=template)
    key = stack.backlog.create_issue(PROJECT, summary="bench approval", description=body, status="処理中")[
        "issueKey"
    ]
    time.sleep(SETTLE_S)
    approved = time.time()
    stack.backlog.update_issue(key, status="automedia承認")
    while (received := comment_received(stack, key)) is None:
        if time.time() - approved > TIMEOUT_S:
            raise SystemExit(f"no reservation comment on {key} within {TIMEOUT_S:.0f} s")
        time.sleep(0.005)
    return received - approved


def run_setup(args: argparse.Namespace, database: str, broker: str, tmp: Path) -> Result:
    env = dict(ENV)
    setup = f"{database}+{broker}"
    if broker == "redis":
        redis_flush(args.redis_url)
        env["REDIS_URL"] = args.redis_url
    url = POSTGRES_URL if database == "postgresql" else None
    # The fake Backlog answers at once: the table's figures are automedia's own milliseconds.
    with Stack(tmp_dir=tmp / f"{database}-{broker}", database_url=url, env=env, backlog_latency=0) as stack:
        stack.add_tenant(SLUG, PROJECT)
        standard_plan(stack)
        start_processes(stack, delivery_workers=4)
        template = f"announce_open@{stack.templates['announce_open']}"
        seconds = [approve_one(stack, template) for _ in range(args.warmup + args.approvals)][args.warmup :]
    ms = sorted(1000 * s for s in seconds)
    return Result(
        setup,
        len(ms),
        round(percentile(ms, 0.5), 1),
        round(percentile(ms, 0.9), 1),
        round(ms[-1], 1),
        round(sum(ms) / len(ms), 1),
    )


def main() -> int:
    args = parse_args()
    setups = {
        "sqlite": [("sqlite", "orm")],
        "postgres": [("postgresql", "orm")],
        "all": [("sqlite", "orm"), ("postgresql", "orm"), ("postgresql", "redis")],
    }[args.database]
    speed = [calibration()]
    try:
        with tempfile.TemporaryDirectory(prefix="automedia-bench-approval-") as tmp:
            results = [run_setup(args, database, broker, Path(tmp)) for database, broker in setups]
    finally:
        if any(database == "postgresql" for database, _ in setups):
            from bench.webhook import postgres

            postgres(POSTGRES_URL, create=False)
    speed.append(calibration())
    if args.json:
        print(json.dumps({"results": [asdict(r) for r in results], "calibration_s": speed}))
        return 0
    print(f"{'setup':<18} {'approvals':>9} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8} {'mean ms':>8}")
    for r in results:
        print(f"{r.setup:<18} {r.approvals:>9} {r.p50_ms:>8} {r.p90_ms:>8} {r.max_ms:>8} {r.mean_ms:>8}")
    print(
        "approval (status -> automedia承認 on the fake Backlog) -> automedia's reservation comment received"
    )
    print(
        f"machine speed (bench/machine.py): 10M additions in {speed[0]} s at the start, {speed[1]} s at the end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

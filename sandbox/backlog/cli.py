"""``python -m sandbox.backlog``: the fake Backlog as a stand-alone server (benchmarks, demos)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import threading
from collections.abc import Sequence
from datetime import timedelta

from sandbox.backlog.records import utc_now
from sandbox.backlog.server import REAL_LATENCY, FakeBacklog, Latency
from sandbox.backlog.ui import demo_description

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.backlog", description="Fake Backlog for the automedia sandbox."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--api-key", default="sandbox-api-key")
    parser.add_argument("--project", action="append", help="project key; repeat for more (default: DEMO)")
    parser.add_argument("--webhook-url", help="webhook URL for every project; '{project}' becomes the key")
    parser.add_argument(
        "--seed-approved",
        type=int,
        default=0,
        metavar="N",
        help="create N issues in automedia承認 (publishing tomorrow), spread over the projects (benchmarks)",
    )
    parser.add_argument("--read-limit", type=int, help="enforce this many GETs per window (and 429 beyond)")
    parser.add_argument("--update-limit", type=int, help="enforce this many POST / PATCH / DELETE per window")
    parser.add_argument("--rate-window", type=float, default=60.0, help="seconds of a rate-limit window")
    parser.add_argument(
        "--latency",
        type=latency_arg,
        default=REAL_LATENCY,
        metavar="S[-S]",
        help="seconds each API call takes, or a range drawn from per call (default: 0.15-0.3, as Backlog)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    fake = FakeBacklog(
        api_key=args.api_key, host=args.host, port=args.port, webhook_mode="post", latency=args.latency
    )
    for key in args.project or ["DEMO"]:
        fake.add_project(key, name=f"{key} 配信")
        if args.webhook_url:
            fake.set_webhook(key, args.webhook_url.replace("{project}", key))
    _seed_approved(fake, args.project or ["DEMO"], args.seed_approved)
    if args.read_limit or args.update_limit:
        high = 10**9  # a group without a limit given is not limited
        fake.set_rate_limits(
            read=args.read_limit or high, update=args.update_limit or high, window=args.rate_window
        )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with fake:
        logger.info("fake Backlog at %s/", fake.base_url)
        with contextlib.suppress(KeyboardInterrupt):
            stopping.wait()
    if fake.rate_limit_enforced:  # the benchmark reads this line: a paced client draws none
        logger.info("rate-limited answers (429): %d", fake.rate_limited)


def latency_arg(text: str) -> Latency:
    """ "0.25" or "0.15-0.3" (seconds)."""
    low, _, high = text.partition("-")
    try:
        return (float(low), float(high)) if high else float(low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not seconds or a range of seconds") from None


def _seed_approved(fake: FakeBacklog, project_keys: Sequence[str], n: int) -> None:
    description = demo_description(utc_now() + timedelta(days=1))
    for i in range(n):
        project = project_keys[i % len(project_keys)]
        fake.create_issue(project, summary=f"配信 {i}", description=description, status="automedia承認")
    fake.outbox.clear()  # seeding is setup, not activity anyone should receive
    if n:
        logger.info("seeded %d approved issues", n)

"""Run the chaos campaigns (all by default) and print one line of figures per campaign.

`make chaos` or `.venv/bin/python -m bench.chaos [--campaign NAME ...] [--seed N] [--logs DIR]`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.chaos.campaigns import CAMPAIGNS, POSTGRES_URL, run  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--campaign", action="append", choices=list(CAMPAIGNS), help="run only this one (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=15, help="seeds every random choice (kills, LINE faults)")
    parser.add_argument("--logs", type=Path, help="keep the processes' logs here (default: a temporary dir)")
    parser.add_argument(
        "--register",
        choices=["webhooks", "scan"],
        default="webhooks",
        help="how the approvals are registered: one webhook each, as users approve (default), or one scan",
    )
    return parser.parse_args()


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> int:
    args = parse_args()
    # SIGTERM/SIGINT unwind through the `with Stack` blocks: every process is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    names = args.campaign or list(CAMPAIGNS)
    began = time.monotonic()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"chaos seed {args.seed}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, load {load}"
    )
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="automedia-chaos-") as tmp:
            logs = args.logs or Path(tmp)
            for name in names:
                campaign = CAMPAIGNS[name]
                say(f"{name}: {campaign.title}")
                result = run(campaign, args.seed, logs, say, args.register)
                results.append(result)
                print(result.line(), flush=True)
    finally:
        if any(CAMPAIGNS[n].database.startswith("postgres") for n in names):
            from bench.webhook import postgres

            postgres(POSTGRES_URL, create=False)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"total {time.monotonic() - began:.0f} s, load at the end {load}")
    broken = [r.campaign for r in results if r.lost or r.double]
    if broken:
        say(f"lost or double deliveries in: {', '.join(broken)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

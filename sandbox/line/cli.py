"""``python -m sandbox.line``: the fake LINE as a stand-alone server."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import threading
from collections.abc import Sequence

from sandbox.line.server import FakeLine

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.line", description="Fake LINE Messaging API for the automedia sandbox."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8082)
    parser.add_argument(
        "--token", action="append", help="accepted channel access token; repeat (default: any)"
    )
    parser.add_argument("--group", action="append", default=[], help="group id to register; repeat")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    fake = FakeLine(channel_tokens=set(args.token) if args.token else None, host=args.host, port=args.port)
    for group_id in args.group:
        fake.add_group(group_id)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with fake:
        logger.info("fake LINE at %s/", fake.base_url)
        with contextlib.suppress(KeyboardInterrupt):
            stopping.wait()
    logger.info("fake LINE stopped")

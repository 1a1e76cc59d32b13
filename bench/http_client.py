"""Outbound HTTP benchmark: client CPU per call of each engine of core/http.py.

`make bench-http` (or `.venv/bin/python bench/http_client.py --help`). The fake LINE runs
in a child process on loopback, so its CPU is not counted; each engine makes the same LINE
push (a JSON body, the Authorization and X-Line-Retry-Key headers, the answer's JSON
read) through `http_client`, as LineTransport does, one call after another on one kept-alive
connection. Client CPU is the calling thread's (`time.thread_time`); wall time includes the
fake's. Engines alternate in rounds, so a change in the machine's speed hits both alike;
the calibration line (a fixed pure-Python loop) says how fast the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "automedia_site.settings")
os.environ.setdefault("DEBUG", "1")  # no production secrets needed: nothing here stores or serves

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from bench.machine import calibration  # noqa: E402
from bench.webhook import fake_url  # noqa: E402
from core.http import http_client  # noqa: E402

ENGINES = ("curl", "httpx")
BODY = {"to": "C" + "0" * 32, "messages": [{"type": "text", "text": "タスクを承りました #1"}]}


def per_call(engine: str, base_url: str, token: str, calls: int) -> tuple[float, float]:
    settings.OUTBOUND_HTTP_CLIENT = engine
    client = http_client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=10.0)
    try:
        for _ in range(50):  # warm: the connection, caches
            push(client)
        cpu, wall = time.thread_time(), time.perf_counter()
        for _ in range(calls):
            push(client)
        return (time.thread_time() - cpu) / calls, (time.perf_counter() - wall) / calls
    finally:
        client.close()


def push(client) -> None:
    response = client.request(
        "POST", "/v2/bot/message/push", json=BODY, headers={"X-Line-Retry-Key": str(uuid.uuid4())}
    )
    if response.status_code != 200:
        raise SystemExit(f"the fake LINE answered {response.status_code}: {response.text[:200]}")
    response.json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per engine per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    token = "bench-token"
    command = [sys.executable, "-m", "sandbox.line", "--port", "0", "--token", token]
    with tempfile.NamedTemporaryFile(prefix="bench-http-line-", suffix=".log") as log:
        fake = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
        try:
            base_url = fake_url(fake, Path(log.name), "LINE", timeout=10.0)
            loop = calibration()
            rounds = [
                {engine: per_call(engine, base_url, token, args.calls) for engine in ENGINES}
                for _ in range(args.rounds)
            ]
        finally:
            fake.terminate()
            fake.wait()
    best = {engine: min(r[engine][0] for r in rounds) for engine in ENGINES}
    result = {
        "calibration_loop_s": round(loop, 2),
        "calls_per_round": args.calls,
        "rounds": [
            {e: {"cpu_us": round(c * 1e6), "wall_us": round(w * 1e6)} for e, (c, w) in r.items()}
            for r in rounds
        ],
        "best_cpu_us": {engine: round(cpu * 1e6) for engine, cpu in best.items()},
        "httpx_over_curl": round(best["httpx"] / best["curl"], 2),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"calibration: 10M additions in {loop:.2f} s")
    for n, r in enumerate(result["rounds"], 1):
        cells = "  ".join(f"{e} {v['cpu_us']:>5} µs CPU / {v['wall_us']:>5} µs wall" for e, v in r.items())
        print(f"round {n}: {cells}")
    print(f"client CPU per LINE push, best round: curl {result['best_cpu_us']['curl']} µs, "
          f"httpx {result['best_cpu_us']['httpx']} µs: httpx / curl = {result['httpx_over_curl']}")  # fmt: skip


if __name__ == "__main__":
    main()

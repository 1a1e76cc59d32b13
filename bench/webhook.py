"""Webhook receiver benchmark: automedia under gunicorn vs bare Django views.

`make bench-webhook` (or `.venv/bin/python bench/webhook.py --help`). Every server runs
gunicorn with automedia's gunicorn.conf.py (2 workers; its threads, or `--threads`);
the same asyncio client posts N unique Backlog activities to each, one after the other,
and the receiver's database is checked afterwards. Baselines: `bare` (a Django view
with no apps and no middleware: the ratio target is measured against it) and
`project-bare` (a bare view on automedia's own settings, middleware and webhook base
view: what automedia's own work costs on top of the framework).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import runpy
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/backlog/issue_updated.json"
HOST = "127.0.0.1"
SERVER = runpy.run_path(str(ROOT / "gunicorn.conf.py"))  # automedia's production server config
P99_TARGET_MS = 100.0
RATIO_TARGET = 0.5


@dataclass
class Result:
    target: str
    requests: int
    concurrency: int
    req_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: int


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=200, help="uncounted requests per server")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument(
        "--threads", type=int, default=None,
        help="threads per gunicorn worker for every server (default: gunicorn.conf.py's for the database; 1 = sync)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args()
    if args.threads is None:
        args.threads = SERVER["default_threads"](args.database_url)
    return args


# -- servers -----------------------------------------------------------------------


def held_socket() -> socket.socket:
    """A listening socket on a free port, handed to gunicorn as `fd://N`: bound from here on, so
    no other socket can take the port between choosing it and the server starting."""
    return socket.create_server((HOST, 0))


def fake_url(proc: subprocess.Popen, log: Path, name: str, timeout: float = 120.0) -> str:
    """The base URL of a sandbox fake started with `--port 0` (`python -m sandbox.line`,
    `sandbox.backlog`), from the line it logs to `log` once it listens ("fake LINE at
    http://...:N/"): the port is the one it bound itself, so nothing can take it between
    choosing it and listening, as with a port found free here and bound later."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := re.search(rf"fake {name} at (http://\S+?)/?$", log.read_text(errors="replace"), re.M):
            return found.group(1)
        if proc.poll() is not None:
            raise SystemExit(
                f"fake {name} exited with {proc.returncode}: {log.read_text(errors='replace')[-500:]}"
            )
        time.sleep(0.05)
    stop(proc)
    raise SystemExit(f"fake {name} did not listen within {timeout:.0f} s")


def base_env(database_url: str) -> dict[str, str]:
    from cryptography.fernet import Fernet

    env = {k: v for k, v in os.environ.items() if k not in {"Q_SYNC", "REDIS_URL", "DEBUG"}}
    env.update(
        DJANGO_SETTINGS_MODULE="automedia_site.settings",
        DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode(),
        DATABASE_URL=database_url,
        LOG_LEVEL="WARNING",
        BACKLOG_ALLOWED_HOSTS=f"{HOST},localhost",  # the tenants' Backlog is a local fake
        SECURE_SSL_REDIRECT="0",  # plain HTTP on loopback
    )
    return env


def manage(env: dict[str, str], *args: str) -> str:
    cmd = [sys.executable, "manage.py", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def start_gunicorn(app: str, env: dict[str, str], listener: socket.socket, threads: int) -> subprocess.Popen:
    """gunicorn with automedia's gunicorn.conf.py (2 workers), the given threads, on `listener`."""
    port, fd = listener.getsockname()[1], listener.fileno()
    cmd = [sys.executable, "-m", "gunicorn", app, "--config", str(ROOT / "gunicorn.conf.py")]
    cmd += ["--workers", "2", "--bind", f"fd://{fd}"]
    cmd += ["--chdir", str(ROOT), "--no-control-socket", "--log-level", "warning"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**env, "GUNICORN_THREADS": str(threads)}, pass_fds=(fd,)
    )  # the conf picks the worker
    # The socket listens already (the kernel accepts connections for it): ready means
    # gunicorn answers HTTP, with any status.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn {app} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=1).close()
            return proc
        except urllib.error.HTTPError:
            return proc
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise SystemExit(f"gunicorn {app} did not answer on {port} within 30 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- databases ---------------------------------------------------------------------


def postgres(url: str, create: bool) -> bool:
    """Create the benchmark database if missing (True when created), or drop it."""
    import psycopg
    from psycopg import sql

    name = urlsplit(url).path.lstrip("/")
    admin = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not create:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            return False
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return True


def event_counts(env: dict[str, str], first_id: int, n: int) -> dict[str, int]:
    code = (
        "import json; from backlog_bridge.models import BacklogEvent as E; from django_q.models import OrmQ; "
        f"run = E.objects.filter(tenant__slug='bench', activity_id__gte={first_id}, activity_id__lt={first_id + n}); "
        "print(json.dumps({'run_events': run.count(), 'all_events': E.objects.count(), "
        "'queued_tasks': OrmQ.objects.count()}))"
    )
    return json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1])


# -- load --------------------------------------------------------------------------


def payloads(first_id: int, n: int) -> list[bytes]:
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    out = []
    for i in range(n):
        activity = {**template, "id": first_id + i}
        activity["content"] = {**template["content"], "key_id": 1 + i % 100}
        out.append(json.dumps(activity, ensure_ascii=False).encode())
    return out


async def post(port: int, path: str, body: bytes) -> tuple[int, bytes]:
    """One POST on a fresh connection, as each Backlog webhook comes.

    A raw HTTP/1.1 exchange, not httpx: httpx costs ~1.3 ms of client CPU per request
    on this machine and became the bottleneck; this costs ~0.2 ms.
    """
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        head = f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        writer.write(f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        data = await reader.read()  # to EOF: we asked for Connection: close
    finally:
        writer.close()
    head, _, answer = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), answer


async def load(port: int, path: str, bodies: list[bytes], concurrency: int) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    todo = iter(bodies)

    async def client() -> None:
        nonlocal errors
        for body in todo:
            start = time.perf_counter()
            try:
                status, answer = await post(port, path, body)
                ok = status == 200 and json.loads(answer).get("result") == "accepted"
            except (OSError, ValueError, asyncio.IncompleteReadError):
                ok = False
            latencies.append(time.perf_counter() - start)
            errors += not ok

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies, errors, time.perf_counter() - began


def measure(target: str, port: int, path: str, warm: list[bytes], bodies: list[bytes], conc: int) -> Result:
    asyncio.run(load(port, path, warm, conc))
    latencies, errors, wall = asyncio.run(load(port, path, bodies, conc))
    ms = sorted(x * 1000 for x in latencies)

    def pct(p: float) -> float:
        return ms[min(len(ms) - 1, int(len(ms) * p))]

    n = len(bodies)
    return Result(target, n, conc, n / wall, pct(0.5), pct(0.9), pct(0.99), ms[-1], errors)


# -- main --------------------------------------------------------------------------


VERDICT = {True: "met", False: "MISSED"}
ROW = "{:<13} {:>8} {:>5} {:>8} {:>7} {:>7} {:>7} {:>7} {:>6}"


def verdicts(auto: Result, ratio: float) -> dict[str, bool]:
    return {"p99_met": auto.p99_ms <= P99_TARGET_MS, "ratio_met": ratio >= RATIO_TARGET}


def server_label(threads: int) -> str:
    return f"gunicorn, 2 workers x {threads} threads (gthread)" if threads > 1 else "gunicorn, 2 sync workers"


def print_table(
    results: list[Result], ratio: float, counts: dict[str, int], database: str, threads: int
) -> None:
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"server: {server_label(threads)}, the same for every target")
    print(f"database: {database}; {os.cpu_count()} CPUs; load average after the run {load}")
    print(ROW.format("target", "requests", "conc", "req/s", "p50 ms", "p90", "p99", "max", "errors"))
    for r in results:
        ms = (f"{x:.1f}" for x in (r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms))
        print(ROW.format(r.target, r.requests, r.concurrency, f"{r.req_s:.0f}", *ms, r.errors))
    auto, met = results[0], verdicts(results[0], ratio)
    print(f"BacklogEvent rows from the measured run: {counts['run_events']} (expected {auto.requests})")
    print(f"all BacklogEvent rows: {counts['all_events']}; queued task rows: {counts['queued_tasks']}")
    print(f"p99 {auto.p99_ms:.1f} ms <= {P99_TARGET_MS:.0f} ms: {VERDICT[met['p99_met']]}")
    print(
        f"req/s automedia / bare (no middleware) = {ratio:.2f} >= {RATIO_TARGET}: {VERDICT[met['ratio_met']]}"
    )
    print(f"req/s automedia / project-bare = {auto.req_s / results[1].req_s:.2f}")


def run(args: argparse.Namespace, tmp: Path) -> int:
    database = args.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}"
    env = base_env(database)
    manage(env, "migrate", "--noinput")
    automedia, project, bare = held_socket(), held_socket(), held_socket()
    port = automedia.getsockname()[1]
    tenant = manage(
        env, "add_tenant", "bench", "--backlog-url", "http://127.0.0.1:9", "--backlog-api-key", "k",
        "--backlog-project", "ACME", "--base-url", f"http://{HOST}:{port}", "--no-check", "--json",
    )  # fmt: skip
    path = urlsplit(json.loads(tenant)["backlog_webhook_url"]).path
    first_id = time.time_ns() // 1000  # unique across runs, also against a kept PostgreSQL db
    warm = payloads(first_id, args.warmup)
    bodies = payloads(first_id + args.warmup, args.requests)
    bare_env = {**env, "DJANGO_SETTINGS_MODULE": "bench.bare_site"}
    project_env = {**env, "DJANGO_SETTINGS_MODULE": "bench.project_site"}
    results = []
    for target, app, srv_env, listener in (
        ("automedia", "automedia_site.wsgi", env, automedia),
        ("project-bare", "automedia_site.wsgi", project_env, project),
        ("bare", "bench.bare_site:application", bare_env, bare),
    ):
        proc = start_gunicorn(app, srv_env, listener, args.threads)
        try:
            results.append(measure(target, listener.getsockname()[1], path, warm, bodies, args.concurrency))
        finally:
            stop(proc)
            listener.close()
    counts = event_counts(env, first_id + args.warmup, args.requests)
    ratio = results[0].req_s / results[2].req_s  # against the bare Django view
    engine = "postgresql" if database.startswith("postgres") else "sqlite (WAL)"
    if args.json:
        out = {
            "server": server_label(args.threads),
            "database": engine,
            "ratio": ratio,
            "loadavg": os.getloadavg(),
            **counts,
        }
        out |= verdicts(results[0], ratio) | {"results": [asdict(r) for r in results]}
        print(json.dumps(out, indent=2))
    else:
        print_table(results, ratio, counts, engine, args.threads)
    if counts["run_events"] != args.requests or any(r.errors for r in results):
        print("FAILED: errors above, or not every webhook was stored once", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    args = parse_args()
    # SIGTERM/SIGINT unwind through the `finally` blocks: servers stopped, temp dir and db gone.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    created = args.database_url.startswith("postgres") and postgres(args.database_url, create=True)
    try:
        with tempfile.TemporaryDirectory(prefix="automedia-bench-") as tmp:
            return run(args, Path(tmp))
    finally:
        if created:
            postgres(args.database_url, create=False)


if __name__ == "__main__":
    sys.exit(main())

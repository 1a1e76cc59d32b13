"""Backlog scan benchmark: `manage.py scan_backlog --json` over a big fake Backlog.

`make bench-scan` (or `.venv/bin/python bench/scan.py --help`). For each size
(default 20,000 and 40,000 approved issues over 10 tenants) it starts the fake
Backlog in its own process, seeded with the issues, migrates a throwaway database,
adds the tenants and runs the scan twice as a subprocess (`--workers 2`: two
tenants at once): run 1 finds every issue unscheduled (all leaks, all rescued: the
worst case), run 2 finds them all scheduled (the normal case). Wall time and the
scan processes' peak RSS (wait4's ru_maxrss: the largest of the scan and its
workers, so the fake's memory is not counted) are measured per run.

`--read-limit` / `--update-limit` / `--rate-window` make the fake enforce Backlog's
rate limits (it answers 429 beyond them): the scan must still finish without errors,
paced by the X-RateLimit-* headers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.webhook import base_env, fake_url, manage, postgres, stop  # noqa: E402

API_KEY = "bench-api-key"
WALL_TARGET_S = 30.0  # the normal scan (run 2)
WORST_WALL_TARGET_S = 60.0  # every issue a leak, rescued (run 1), for WORST_TARGET_ISSUES issues
WORST_TARGET_ISSUES = 20_000  # other sizes: the same time per issue (40,000 in 120 s)
RSS_TARGET_MB = 200.0
FLAT_TOLERANCE = 0.10  # peak RSS at 2x the issues may grow at most this much


@dataclass
class Run:
    issues: int
    tenants: int
    run: str
    exit_code: int
    wall_s: float
    cpu_s: float  # user + system of the scan and its workers (wait4)
    peak_rss_mb: float
    approved: int
    scheduled: int
    leaks: int
    rescued: int
    errors: int


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 40_000], help="approved issues")
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2, help="scan_backlog --workers (tenants at once)")
    parser.add_argument("--read-limit", type=int, help="the fake enforces this many GETs per window")
    parser.add_argument("--update-limit", type=int, help="the fake enforces this many writes per window")
    parser.add_argument("--rate-window", type=float, default=60.0, help="seconds (with the limits)")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    return parser.parse_args()


# -- processes ---------------------------------------------------------------------


def start_fake(
    projects: list[str], issues: int, limits: list[str], log: Path
) -> tuple[subprocess.Popen, str]:
    """The fake Backlog on a port of its choosing, seeded; (its process, its base URL) once it
    listens (after seeding)."""
    cmd = [sys.executable, "-m", "sandbox.backlog", "--port", "0", "--api-key", API_KEY]
    cmd += [arg for key in projects for arg in ("--project", key)] + ["--seed-approved", str(issues)]
    cmd += limits
    with log.open("wb") as stderr:
        proc = subprocess.Popen(cmd, cwd=ROOT, stderr=stderr)
    return proc, fake_url(proc, log, "Backlog", timeout=120.0)


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def add_tenants(env: dict[str, str], fake_url: str, projects: list[str]) -> None:
    code = (
        "from core.models import Tenant\n"
        f"for key in {projects!r}:\n"
        "    Tenant.objects.create(slug=key.lower(), name=key, backlog_base_url="
        f"{fake_url!r}, backlog_api_key={API_KEY!r}, backlog_project_key=key)\n"
    )
    manage(env, "shell", "-c", code)


def scan(env: dict[str, str], tmp: Path, workers: int) -> tuple[int, float, float, float, dict]:
    """One `scan_backlog --json` run: (exit code, wall s, CPU s, peak RSS MB, report)."""
    out_path = tmp / "scan.json"
    with out_path.open("wb") as out:
        began = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "scan_backlog", "--json", "--workers", str(workers)],
            cwd=ROOT,
            env=env,
            stdout=out,
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not the max of all children
        wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    report = json.loads(out_path.read_text()) if out_path.stat().st_size else {"totals": {}}
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, report


def schedule_count(env: dict[str, str]) -> dict[str, int]:
    code = (
        "import json; from deliveries.models import DeliverySchedule as S; "
        "print(json.dumps({'schedules': S.objects.count(), 'scan_reason': S.objects.filter(reason='scan').count()}))"
    )
    return json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1])


# -- one size ----------------------------------------------------------------------


def measure_size(args: argparse.Namespace, issues: int, tmp: Path) -> tuple[list[Run], dict]:
    database = args.database_url or f"sqlite:///{tmp / f'bench-{issues}.sqlite3'}"
    env = base_env(database)
    manage(env, "migrate", "--noinput")
    projects = [f"BENCH{i}" for i in range(args.tenants)]
    fake_log = tmp / f"fake-{issues}.log"
    fake, fake_base = start_fake(projects, issues, _limits(args), fake_log)
    try:
        add_tenants(env, fake_base, projects)
        runs = []
        for name in ("1: all leaks, rescued", "2: all scheduled"):
            code, wall, cpu, rss, report = scan(env, tmp, args.workers)
            t = report["totals"]
            runs.append(Run(issues, args.tenants, name, code, wall, cpu, rss, *_totals(t)))
        extra = schedule_count(env) | {"fake_peak_rss_mb": peak_rss_mb(fake.pid)}
    finally:
        stop(fake)
    if args.read_limit or args.update_limit:
        extra["rate_limited_429"] = _rate_limited(fake_log)
    return runs, extra


def _rate_limited(log: Path) -> int:
    """The 429s the fake answered because a limit was spent (its last log line says)."""
    found = re.findall(r"rate-limited answers \(429\): (\d+)", log.read_text(errors="replace"))
    return int(found[-1]) if found else -1


def _limits(args: argparse.Namespace) -> list[str]:
    pairs = (("--read-limit", args.read_limit), ("--update-limit", args.update_limit))
    limits = [arg for name, value in pairs if value for arg in (name, str(value))]
    return limits + ["--rate-window", str(args.rate_window)] if limits else []


def _totals(t: dict) -> tuple[int, ...]:
    return tuple(t.get(k, -1) for k in ("approved", "scheduled", "leaks", "rescued", "errors"))


# -- report ------------------------------------------------------------------------

VERDICT = {True: "met", False: "MISSED"}
ROW = "{:>7} {:>7} {:<22} {:>4} {:>8} {:>7} {:>8} {:>8} {:>9} {:>6} {:>7} {:>6}"


def verdicts(runs: list[Run]) -> dict[str, bool]:
    out = {
        "worst_wall_met": all(
            r.wall_s <= WORST_WALL_TARGET_S * r.issues / WORST_TARGET_ISSUES
            for r in runs
            if r.run.startswith("1")
        ),
        "wall_met": all(r.wall_s <= WALL_TARGET_S for r in runs if r.run.startswith("2")),
        "rss_met": all(r.peak_rss_mb <= RSS_TARGET_MB for r in runs),
    }
    sizes = sorted({r.issues for r in runs})
    for kind in {r.run for r in runs}:
        rss = [next(r.peak_rss_mb for r in runs if r.issues == n and r.run == kind) for n in sizes]
        out[f"rss_flat_run{kind[0]}"] = rss[-1] <= rss[0] * (1 + FLAT_TOLERANCE)
    return out


def correct(runs: list[Run], extras: dict[int, dict]) -> bool:
    for r in runs:
        expected = (
            (3, r.issues, 0, r.issues, r.issues, 0)
            if r.run.startswith("1")
            else (0, r.issues, r.issues, 0, 0, 0)
        )
        if (r.exit_code, r.approved, r.scheduled, r.leaks, r.rescued, r.errors) != expected:
            return False
    paced = all(e.get("rate_limited_429", 0) == 0 for e in extras.values())
    return paced and all(e["schedules"] == n == e["scan_reason"] for n, e in extras.items())


def print_table(runs: list[Run], extras: dict[int, dict], database: str) -> None:
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"database: {database}; {os.cpu_count()} CPUs; load average after the runs {load}")
    print(ROW.format("issues", "tenants", "run", "exit", "wall s", "CPU s", "RSS MB", "approved", "scheduled", "leaks", "rescued", "errors"))  # fmt: skip
    for r in runs:
        print(ROW.format(r.issues, r.tenants, r.run, r.exit_code, f"{r.wall_s:.1f}", f"{r.cpu_s:.1f}", f"{r.peak_rss_mb:.1f}",
                         r.approved, r.scheduled, r.leaks, r.rescued, r.errors))  # fmt: skip
    for n, e in extras.items():
        print(f"{n} issues: {e['schedules']} schedules ({e['scan_reason']} with reason scan); "
              f"fake Backlog's own peak RSS {e['fake_peak_rss_mb']:.0f} MB (not counted)")  # fmt: skip
        if "rate_limited_429" in e:
            print(f"{n} issues: the fake answered {e['rate_limited_429']} calls with 429 (rate limit)")
    for name, met in verdicts(runs).items():
        print(f"{name}: {VERDICT[met]}")
    print(f"targets: wall <= {WORST_WALL_TARGET_S:.0f} s per {WORST_TARGET_ISSUES:,} issues all leaks, <= {WALL_TARGET_S:.0f} s all scheduled, peak RSS <= {RSS_TARGET_MB:.0f} MB, "
          f"RSS at the largest size within {FLAT_TOLERANCE:.0%} of the smallest")  # fmt: skip


def run(args: argparse.Namespace, tmp: Path) -> int:
    runs: list[Run] = []
    extras: dict[int, dict] = {}
    for issues in args.sizes:
        if args.database_url.startswith("postgres"):  # ours (see main): a fresh one per size
            postgres(args.database_url, create=False)
            postgres(args.database_url, create=True)
        size_runs, extras[issues] = measure_size(args, issues, tmp)
        runs += size_runs
    engine = "postgresql" if args.database_url.startswith("postgres") else "sqlite (WAL)"
    if args.json:
        out = {"database": engine, "loadavg": os.getloadavg(), **verdicts(runs)}
        print(json.dumps(out | {"runs": [asdict(r) for r in runs], "extras": extras}, indent=2))
    else:
        print_table(runs, extras, engine)
    if not correct(runs, extras):
        print("FAILED: a run did not see, rescue or report every issue as expected", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    own_db = args.database_url.startswith("postgres")
    if own_db and not postgres(args.database_url, create=True):
        raise SystemExit("--database-url must name a PostgreSQL database that does not exist yet")
    try:
        with tempfile.TemporaryDirectory(prefix="automedia-bench-scan-") as tmp:
            return run(args, Path(tmp))
    finally:
        if own_db:
            postgres(args.database_url, create=False)


if __name__ == "__main__":
    sys.exit(main())

"""The benchmarks' scripts (bench/, run by `make bench-*` and `make chaos`, not by the suite):
each one still starts, and the fakes they start on a port of their own choosing are found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.webhook import fake_url, stop

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [
    "webhook.py",
    "scan.py",
    "delivery.py",
    "approval.py",
    "linepush.py",
    "http_client.py",
    "profile_top.py",
    "server_phases.py",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_starts(script):
    # --help imports every module the script needs: a name moved or removed fails here,
    # not on the next person's `make bench-...`.
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--help"], cwd=ROOT, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_the_chaos_campaign_starts():
    done = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--help"], cwd=ROOT, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr[-2000:]


def test_a_fake_started_on_port_zero_is_found_at_the_port_it_bound(tmp_path):
    log = tmp_path / "line.log"
    command = [sys.executable, "-m", "sandbox.line", "--port", "0", "--token", "t"]
    with log.open("wb") as stderr:
        proc = subprocess.Popen(command, cwd=ROOT, stderr=stderr)
    try:
        url = fake_url(proc, log, "LINE", timeout=30.0)
        answer = httpx.get(f"{url}/v2/bot/message/quota", headers={"Authorization": "Bearer t"}, timeout=5.0)
    finally:
        stop(proc)

    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
    assert answer.status_code == 200


def test_a_fake_that_exits_before_listening_is_reported(tmp_path):
    log = tmp_path / "line.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox.line", "--no-such-flag"], cwd=ROOT, stderr=stderr
        )

    with pytest.raises(SystemExit, match="fake LINE exited with 2"):
        fake_url(proc, log, "LINE", timeout=30.0)


def test_the_delivery_benchmarks_json_is_one_object(capsys):
    from bench.delivery import report

    report([], [0.31, 0.33], as_json=True)

    printed = json.loads(capsys.readouterr().out)
    assert printed["calibration_s"] == [0.31, 0.33]
    assert printed["runs"] == []


def test_the_delivery_benchmark_reports_error_lines_of_both_log_formats():
    from bench.delivery import error_lines

    log = "\n".join(
        [
            "2026-12-05 02:10:00,123 INFO automedia.scheduler scheduler h:1 started (poll 0.50s)",
            "2026-12-05 02:10:04,001 ERROR automedia.scheduler scheduler pass failed",
            "Traceback (most recent call last):",
            "django.db.utils.OperationalError: database is locked",
            "[2026-12-05 02:10:05 +0000] [42] [ERROR] Worker (pid:43) was sent SIGKILL!",
            "[2026-12-05 02:10:05 +0000] [42] [INFO] Booting worker with pid: 44",
            "2026-12-05 02:10:06,000 INFO automedia.x an ERROR in a message is not a level",
        ]
    )

    assert error_lines(log) == [
        "2026-12-05 02:10:04,001 ERROR automedia.scheduler scheduler pass failed",
        "[2026-12-05 02:10:05 +0000] [42] [ERROR] Worker (pid:43) was sent SIGKILL!",
    ]


PERF_SCRIPT = """postgres 
\t          2462a7 base_yyparse
\t          2792db raw_parser
\t          47be10 pg_parse_query
\t          47d359 PostgresMain

postgres 
\t          5c0a10 hash_search_with_hash_value
\t          3a2f00 standard_planner
\t          3a3000 SPI_execute_snapshot
\t          2b1000 AfterTriggerFireDeferred
\t          2a0000 CommitTransactionCommand
\t          47d359 PostgresMain

postgres 
\t          3f0000 tcp_v4_rcv
\t          3f930c [unknown]
"""


def test_the_servers_samples_go_to_the_first_phase_on_their_stack():
    from bench.server_phases import UNMATCHED, server_phases

    counts = server_phases(PERF_SCRIPT)

    # The planner under a commit's foreign-key check counts as the commit's.
    assert counts == {"parse and analyze": 1, "commit: deferred foreign-key checks": 1, UNMATCHED: 1}


def test_a_machine_profile_without_perf_is_refused_before_anything_starts(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "delivery.py"), "--profile-machine", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},  # no perf on it
        timeout=60,
    )

    assert done.returncode == 2
    assert "--profile-machine needs Linux perf" in done.stderr

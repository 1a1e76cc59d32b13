"""Delivery benchmark: how late due deliveries reach LINE, through automedia's real processes.

`make bench-delivery` (or `.venv/bin/python bench/delivery.py --help`). Per database it
starts the e2e tests' Stack (sandbox/stack.py: gunicorn, a default-queue
qcluster, a `deliveries` qcluster, run_scheduler; FakeBacklog and FakeLine in this
process) with the production defaults for lease, poll and logging, then:

1. registers steady-rate × steady-seconds + burst approved issues (group targets, the
   announce_open template) with 投稿日時 two hours ahead: by default one
   `manage.py scan_backlog` rescues them all (`--register webhooks`: one status-change
   webhook per issue instead), and waits for every reservation comment;
2. moves due_at of those rows (one transaction, its start chosen inside it) to the
   measured window: the steady rows at start + i / rate, the burst rows all at one
   instant 10 s after the steady window. 投稿日時 has whole seconds only; this gives an
   even rate and keeps the registration time out of the measurement;
3. steady: lateness = FakeLine's received_at of each push − its row's due_at;
4. burst: the same, plus the time until the last push and deliveries/s;
5. django-q2 comparison: once the write-backs are done and the queues are empty, the same
   steady load as django-q2 `Schedule(schedule_type=ONCE, next_run=due)` rows whose task
   (`push_line` below) pushes one message to the fake LINE, fired by the default qcluster's
   own scheduler; lateness measured the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from automedia_site.workers import delivery_workers, host_cores  # noqa: E402
from bench import platform_phases  # noqa: E402
from bench.machine import calibration  # noqa: E402
from sandbox.backlog import RecordedRequest as BacklogRequest  # noqa: E402
from sandbox.cpu import named_cpu_seconds  # noqa: E402
from sandbox.line import RecordedLineRequest  # noqa: E402
from sandbox.stack import Stack  # noqa: E402

PROJECT = "BENCH"
SLUG = "bench"
PUSH = "/v2/bot/message/push"
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/automedia_bench_delivery"
JST = timezone(timedelta(hours=9), "JST")
PUBLISH_LEAD = timedelta(hours=2)  # 投稿日時 at registration; due_at is moved afterwards
WINDOW_LEAD_S = 4.0  # from the transaction that sets the due times to the first of them
BURST_GAP_S = 10.0  # from the last steady due time to the burst
REGISTER_TIMEOUT_S = 300.0
SETTLE_TIMEOUT_S = 120.0  # write-backs done and both queues empty before the comparison
DJANGO_Q_SCHEDULER_S = 30.0  # django-q2 calls its scheduler every ~30 s (cluster guard loop)
P50_TARGET_S = 0.3
P99_TARGET_S = 0.1
BURST_TARGET_S = 2.5
# One tenant's campaign: a smaller burst due at one instant with LINE answering each push
# after a real round trip (the fake's latency), after the big burst has settled.
CAMPAIGN_TARGET_S = 1.0
IG_GAP_S = 15.0  # from the burst's due time to the Instagram posts'
# The campaign is parked an hour ahead, then, once the burst is written back and the stack
# idle, moved to CAMPAIGN_LEAD_S ahead: the Backlog limit and LINE's round trip are set
# before it is due whatever the burst took, and it is prepared ahead as a real one is.
CAMPAIGN_PARKED_S = 3600.0
CAMPAIGN_LEAD_S = 35.0
INSTAGRAM_TARGET_S = 2.0  # media_publish after the due second, containers made ahead
BURST_POLL_S = 0.05
BURST_CPUS_TARGET = 1.6  # of the machine's CPUs busy with automedia's processes during the burst
BURST_CPU_MS_TARGET = 6.0  # CPU per delivery during the burst, every automedia process and the fakes
RESERVED = "[automedia] 配信を予約しました"
# Another tenant beside the burst: its posts due at the burst's instant and in the seconds
# after it must not wait for the burst's tenant.
NEIGHBOUR_SLUG, NEIGHBOUR_PROJECT = "neighbour", "NEIGHBOUR"
NEIGHBOUR_LATER_S = 5.0
NEIGHBOUR_P99_TARGET_S = 0.3
# The production defaults (.env.example), not the e2e tests' short lease and fast poll.
ENV = {
    "DELIVERY_LEASE_SECONDS": "5",
    "SCHEDULER_POLL_SECONDS": "0.5",
    "Q_WORKERS": "2",
    "LOG_LEVEL": "INFO",
    "DJANGO_Q_LOG_LEVEL": "WARNING",
}


# -- the comparison's task (runs in the default qcluster) -----------------------------


_client: httpx.Client | None = None


def push_line(base_url: str, token: str, to: str, text: str) -> int:
    """One push to the (fake) LINE: what each django-q2 Schedule of the comparison fires.
    One keep-alive client per worker process, as automedia's own LINE transport has."""
    global _client
    if _client is None:
        _client = httpx.Client(timeout=10.0)
    answer = _client.post(
        f"{base_url}{PUSH}",
        headers={"Authorization": f"Bearer {token}"},
        json={"to": to, "messages": [{"type": "text", "text": text}]},
    )
    return answer.status_code


# -- results --------------------------------------------------------------------------


@dataclass
class Result:
    mode: str
    database: str
    n: int
    received: int
    duplicates: int
    p50_s: float
    p99_s: float
    max_s: float
    last_push_s: float | None  # burst: last push − the burst's due_at
    per_s: float
    targets_met: bool
    timeline: list[int] | None = None  # burst: pushes in each half second after due_at
    first_push_s: float | None = None  # burst: first push − the burst's due_at


@dataclass
class Sample:
    """Wall clock, load average and CPU seconds used so far by each process (and this one's
    fakes), at one point of a run."""

    at: float
    load: tuple[float, float, float]
    cpu_s: dict[str, float]


@dataclass
class DatabaseRun:
    database: str
    delivery_workers: int
    registration: str
    registered: int
    samples: dict[str, Sample]  # in the order taken: "begin", "started", "registered", … "end"
    results: list[Result]
    claims_expired: int  # schedules claimed again after their lease ran out, burst due → settled
    machine_halves: list[float]  # the burst: the whole machine's CPUs busy in each half second after due
    machine_busy: float | None  # … and over the burst
    # ERROR lines of each process's log from the window's start (the steady phase) to the end
    log_errors: dict[str, list[str]] = field(default_factory=dict)
    patched_twice: int = 0  # issues Backlog accepted more than one PATCH of (a write-back is one)
    instagram: dict = field(default_factory=dict)  # bench/platform_phases.py instagram_lateness
    writeback: dict = field(default_factory=dict)  # … writeback_pacing: the campaign's write-backs


PROCESSES = ("web", "worker", "deliverer", "scheduler")
SERVER = "postgres server"  # every process named postgres on the machine: not automedia's own


def sample(stack: Stack | None = None) -> Sample:
    cpu = {name: stack.cpu_seconds(name) for name in PROCESSES} if stack else {}
    own = os.times()
    server = {SERVER: named_cpu_seconds("postgres")}
    return Sample(time.time(), os.getloadavg(), cpu | {"bench (fakes)": own.user + own.system} | server)


class MachineBusy:
    """CPUs busy on the whole machine (every process, the database server's too: /proc/stat's
    first line less idle and iowait), read every `every` seconds in a thread while it runs:
    where in a burst the machine sat idle."""

    def __init__(self, every: float = 0.05) -> None:
        self.every = every
        self.readings: list[tuple[float, int, int]] = []  # (time, busy jiffies, all jiffies)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="machine-busy", daemon=True)

    def __enter__(self) -> MachineBusy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _read(self) -> None:
        while True:
            with open("/proc/stat") as stat:
                ticks = [int(v) for v in stat.readline().split()[1:]]
            idle = ticks[3] + ticks[4]
            self.readings.append((time.time(), sum(ticks) - idle, sum(ticks)))
            if self._stop.wait(self.every):
                return

    def busy(self, since: float, until: float) -> float | None:
        """CPUs busy between the first and the last reading taken from `since` to `until`."""
        inside = [r for r in self.readings if since <= r[0] <= until]
        if len(inside) < 2:
            return None
        (_, b0, t0), (_, b1, t1) = inside[0], inside[-1]
        return round((os.cpu_count() or 1) * (b1 - b0) / max(1, t1 - t0), 2)

    def per_half_second(self, since: float, until: float) -> list[float]:
        """CPUs busy in each half second from `since` (the last one ends at `until`)."""
        edges = [since + i / 2 for i in range(int((until - since) * 2) + 1)] + [until]
        spans = [self.busy(a, b) for a, b in zip(edges, edges[1:], strict=False) if b - a > 1e-3]
        return [s for s in spans if s is not None]


def percentile(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def lateness(pushes: Iterable[RecordedLineRequest], due: dict[str, float]) -> tuple[list[float], int]:
    """(sorted lateness of the first push to each expected group, pushes beyond the first)."""
    first: dict[str, float] = {}
    seen: Counter[str] = Counter()
    for push in pushes:
        to = (push.body or {}).get("to")
        if to in due:
            seen[to] += 1
            first[to] = min(first.get(to, push.received_at), push.received_at)
    late = sorted(first[to] - due[to] for to in first)
    return late, sum(n - 1 for n in seen.values())


def steady_result(mode: str, database: str, pushes: list, due: dict[str, float]) -> Result:
    late, duplicates = lateness(pushes, due)
    if not late:
        return Result(mode, database, len(due), 0, duplicates, *(float("nan"),) * 3, None, 0.0, False)
    span = max(due.values()) + late[-1] - min(due.values())  # first due → last push (approx.)
    p50, p99 = percentile(late, 0.5), percentile(late, 0.99)
    met = len(late) == len(due) and not duplicates and p50 <= P50_TARGET_S and p99 <= P99_TARGET_S
    return Result(
        mode, database, len(due), len(late), duplicates, p50, p99, late[-1], None, len(late) / span, met
    )


def burst_result(
    database: str,
    pushes: list,
    due: dict[str, float],
    mode: str = "automedia burst",
    target: float = BURST_TARGET_S,
) -> Result:
    late, duplicates = lateness(pushes, due)
    if not late:
        return Result(mode, database, len(due), 0, duplicates, *(float("nan"),) * 3, None, 0.0, False)
    last = late[-1]
    met = len(late) == len(due) and not duplicates and last <= target
    p50, p99 = percentile(late, 0.5), percentile(late, 0.99)
    return Result(
        mode,
        database,
        len(due),
        len(late),
        duplicates,
        p50,
        p99,
        last,
        last,
        len(late) / last,
        met,
        timeline=[sum(1 for t in late if i / 2 <= t < (i + 1) / 2) for i in range(int(last * 2) + 1)],
        first_push_s=late[0],
    )


# -- the stack --------------------------------------------------------------------------


def start_processes(stack: Stack, workers: int | None) -> None:
    """The Procfile's worker, deliverer and scheduler: one of each. The deliverer runs
    `workers` workers, or as many as it would by default (DELIVERY_WORKERS unset)."""
    deliverer = {"Q_CLUSTER_NAME": "deliveries"}
    if workers is not None:
        deliverer["DELIVERY_WORKERS"] = str(workers)
    stack.spawn("deliverer", "qcluster", env=deliverer)
    stack.spawn("worker", "qcluster")
    stack.spawn("scheduler", "run_scheduler")
    stack.wait_for_log("scheduler", "started")


def standard_plan(stack: Stack) -> None:
    """The standard plan, so that the approval-time quota forecast never refuses the bench's issues
    (the free plan a tenant starts on allows 200 messages a month)."""
    stack.shell(
        "from core.models import Tenant; from line.models import LinePlan, LinePushSettings\n"
        "for t in Tenant.objects.all():\n"
        "    LinePushSettings.objects.update_or_create(tenant=t, defaults={'plan': LinePlan.objects.get(code='standard')})"
    )


def issue_body(*, publish_at: datetime, group: str, template: str) -> str:
    return (
        "## 配信メタ\n"
        "- チャネル: LINE\n"
        f"- 投稿日時: {publish_at:%Y-%m-%d %H:%M:%S} (JST)\n"
        f"- 対象タグ: group:{group}\n"
        f"- テンプレ: {template}\n"
        "\n## 文面 / 変数\n"
        "- date: 2026-12-10\n"
        "- hours: 10:00-18:00\n"
    )


def new_group() -> str:
    return f"C{uuid.uuid4().hex}"


def register(stack: Stack, count: int, how: str, project: str = PROJECT, slug: str = SLUG) -> dict[str, str]:
    """`count` approved issues, registered by automedia itself: {issue key: group}.

    "scan": the issues are written already approved with the webhook off, and one
    `manage.py scan_backlog` rescues them all (the daily safety net's path, ~20 ms each here).
    "webhooks": written with the webhook off, then each moved to automedia承認 (one
    status-change webhook each, processed by the default qcluster), as a manager would."""
    publish_at = (datetime.now(JST) + PUBLISH_LEAD).replace(microsecond=0)
    template = f"announce_open@{stack.templates['announce_open']}"
    status = "automedia承認" if how == "scan" else "処理中"
    stack.backlog.set_webhook(project, None)
    groups: dict[str, str] = {}
    before = reserved(stack)
    for i in range(count):
        group = new_group()
        body = issue_body(publish_at=publish_at, group=group, template=template)
        issue = stack.backlog.create_issue(project, summary=f"bench {i}", description=body, status=status)
        groups[issue["issueKey"]] = group
    stack.backlog.set_webhook(project, stack.tenants[slug]["backlog_webhook_url"])
    if how == "scan":
        stack.manage("scan_backlog", "--json", check=False)  # exit 3: leaks found (and rescued)
    else:
        for key in groups:
            stack.backlog.update_issue(key, status="automedia承認")
    wanted = before + count
    stack.wait_for(lambda: reserved(stack) >= wanted, REGISTER_TIMEOUT_S, 0.5, f"{count} reservations")
    return groups


def reserved(stack: Stack) -> int:
    return sum(1 for r in list(stack.backlog.requests) if is_reservation(r))


def is_reservation(r: BacklogRequest) -> bool:
    """The fake Backlog's record of automedia's reservation comment on an issue."""
    return (
        r.method == "POST"
        and r.path.endswith("/comments")
        and r.status < 300
        and r.form.get("content", [""])[0].startswith(RESERVED)
    )


def written_back(stack: Stack) -> int:
    """Issues Backlog accepted a PATCH of (each counted once, however often it was patched)."""
    return len(patched(stack))


def patched(stack: Stack) -> Counter[str]:
    """{issue path: PATCHes Backlog accepted}."""
    return Counter(
        r.path
        for r in list(stack.backlog.requests)
        if r.method == "PATCH" and r.path.startswith("/api/v2/issues/") and r.status == 200
    )


def move_due(
    stack: Stack,
    steady: list[str],
    burst: list[str],
    args: argparse.Namespace,
    campaign: list[str] | None = None,
    round_seconds: tuple[list[str], tuple[float, ...]] | None = None,
    offsets: dict[str, float] | None = None,
) -> float:
    """Move every row's due_at into the measured window, in one transaction; returns the
    window's start (epoch s), chosen in that transaction WINDOW_LEAD_S ahead. Steady row i is
    due at start + i / rate, every burst row at start + steady seconds + BURST_GAP_S, every
    campaign row CAMPAIGN_PARKED_S after the start (campaign_move brings it in);
    `round_seconds` (keys, offsets): key i at start + offsets[i % len(offsets)] (several due
    at the same round second); `offsets`: {key: seconds after the start} (the neighbour's)."""
    campaign, offsets = campaign or [], offsets or {}
    rounds, round_offsets = round_seconds or ([], (0.0,))
    code = (
        "import time\n"
        "from datetime import datetime, timezone\n"
        "from django.db import transaction\n"
        "from deliveries.models import DeliverySchedule as S\n"
        "from deliveries.services import prepare_from\n"
        f"steady, burst, campaign = {steady!r}, {burst!r}, {campaign!r}\n"
        f"rounds, offsets, others = {rounds!r}, {round_offsets!r}, {offsets!r}\n"
        "def at(ts): return datetime.fromtimestamp(ts, timezone.utc)\n"
        "with transaction.atomic():\n"
        "    rows = {s.task.issue_key: s for s in S.objects.select_related('task')}\n"
        "    assert len(rows) == len(steady) + len(burst) + len(campaign) + len(rounds) + len(others)\n"
        "    assert all(s.lease_until is None for s in rows.values())\n"
        f"    start = time.time() + {WINDOW_LEAD_S!r}\n"
        "    for i, key in enumerate(steady):\n"
        f"        rows[key].due_at = at(start + i / {args.steady_rate!r})\n"
        "    for key in burst:\n"
        f"        rows[key].due_at = at(start + {args.steady_seconds!r} + {BURST_GAP_S!r})\n"
        "    for key in campaign:\n"
        f"        rows[key].due_at = at(start + {CAMPAIGN_PARKED_S!r})\n"
        "    for i, key in enumerate(rounds):\n"
        "        rows[key].due_at = at(start + offsets[i % len(offsets)])\n"
        "    for key, offset in others.items():\n"
        "        rows[key].due_at = at(start + offset)\n"
        "    for s in rows.values():  # prepared ahead from then on, as if registered for that time\n"
        "        s.prepare_at = prepare_from(s.due_at)\n"
        "    S.objects.bulk_update(list(rows.values()), ['due_at', 'prepare_at'], batch_size=500)\n"
        "print(repr(start), time.time() < start - 1.0)\n"
    )
    return _window_start(stack.shell(code), "moving due_at")


def campaign_move(stack: Stack, campaign: list[str]) -> float:
    """Move the parked campaign's rows to one due time CAMPAIGN_LEAD_S from now, in one
    transaction; returns that time (epoch s)."""
    code = (
        "import time\n"
        "from datetime import datetime, timezone\n"
        "from django.db import transaction\n"
        "from deliveries.models import DeliverySchedule as S\n"
        "from deliveries.services import prepare_from\n"
        f"campaign = {campaign!r}\n"
        "with transaction.atomic():\n"
        "    rows = list(S.objects.filter(task__issue_key__in=campaign, lease_until__isnull=True))\n"
        "    assert len(rows) == len(campaign)\n"
        f"    start = float(int(time.time() + {CAMPAIGN_LEAD_S!r}))\n"
        "    for s in rows:\n"
        "        s.due_at = datetime.fromtimestamp(start, timezone.utc)\n"
        "        s.prepare_at = prepare_from(s.due_at)\n"
        "    S.objects.bulk_update(rows, ['due_at', 'prepare_at'], batch_size=500)\n"
        "print(repr(start), time.time() < start - 1.0)\n"
    )
    return _window_start(stack.shell(code), "moving the campaign")


def _window_start(printed: str, what: str) -> float:
    start, in_time = printed.split()
    if in_time != "True":
        print(f"warning: {what} was committed less than 1 s before the first due time", file=sys.stderr)
    return float(start)


def queued_tasks(stack: Stack) -> int:
    return int(stack.shell("from django_q.models import OrmQ; print(OrmQ.objects.count())"))


def settle(stack: Stack, count: int, timeout: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until every delivery was written back and both queues are empty (the write-backs'
    own webhooks processed), so the comparison runs on an idle stack."""
    stack.wait_for(lambda: written_back(stack) >= count, timeout, 0.5, f"{count} write-backs")
    stack.wait_for(lambda: queued_tasks(stack) == 0, SETTLE_TIMEOUT_S, 1.0, "empty django-q2 queues")


def pushes_to(stack: Stack, groups: Iterable[str]) -> int:
    wanted = set(groups)
    return len({(r.body or {}).get("to") for r in stack.line.sent("push")} & wanted)


def wait_pushes(stack: Stack, due: dict[str, float], slack_s: float, interval: float = 0.25) -> None:
    """Until every group in `due` got its push, or `slack_s` after the last due time; checked
    every `interval` seconds."""
    deadline = max(due.values()) + slack_s

    def done() -> bool:
        return pushes_to(stack, due) >= len(due) or time.time() >= deadline

    stack.wait_for(done, deadline - time.time() + 5, interval)  # raises at once if a process dies


def schedule_django_q(stack: Stack, groups: list[str], rate: float) -> float:
    """The comparison: one django-q2 Schedule (ONCE) per push, run by the default qcluster's
    scheduler; group i is due at start + i / rate. Returns start (epoch s)."""
    line = (stack.line.base_url, stack.line_token)
    code = (
        "import time\n"
        "from datetime import datetime, timezone\n"
        "from django_q.models import Schedule\n"
        f"groups = {groups!r}\n"
        f"start = time.time() + {WINDOW_LEAD_S!r}\n"
        "Schedule.objects.bulk_create([Schedule(name=f'bench-{i}', func='bench.delivery.push_line', "
        f"args=repr({line!r} + (group, f'bench django-q2 #{{i}}')), schedule_type=Schedule.ONCE, "
        f"repeats=-1, next_run=datetime.fromtimestamp(start + i / {rate!r}, timezone.utc)) "
        "for i, group in enumerate(groups)])\n"
        "print(repr(start), time.time() < start - 1.0)\n"
    )
    return _window_start(stack.shell(code), "creating the django-q2 schedules")


# -- profile of the burst ----------------------------------------------------------------

PROFILED = ("deliverer", "scheduler")


@contextlib.contextmanager
def machine_profiling(into: Path | None, database: str) -> Iterator[None]:
    """`--profile-machine DIR`: Linux perf samples every process on the machine, the kernel's
    and the PostgreSQL server's included, with call stacks, while the burst runs, into
    DIR/<database>-machine.perf (`perf report -i FILE --comm postgres --children` shows
    where the server's CPU goes). Needs `perf` and the right to sample every CPU (root, or
    kernel.perf_event_paranoid <= 0)."""
    if into is None:
        yield
        return
    into.mkdir(parents=True, exist_ok=True)
    output = into / f"{database}-machine.perf"
    perf = subprocess.Popen(
        ["perf", "record", "--all-cpus", "--call-graph", "fp", "--freq", "997", "--output", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(0.3)  # perf opens its buffers
    try:
        yield
    finally:
        perf.send_signal(signal.SIGINT)
        _, err = perf.communicate(timeout=60)
        if not output.exists():
            print(f"perf recorded nothing: {err.decode(errors='replace')[-500:]}", file=sys.stderr)


@contextlib.contextmanager
def profiling(stack: Stack, into: Path | None, database: str, gil: bool = False) -> Iterator[None]:
    """`--profile DIR`: py-spy samples the deliverer (with its workers) and the scheduler
    while the burst runs, into DIR/<database>-<process>.txt (collapsed stacks, one line per
    stack: `frame;frame;… count`; `bench/profile_top.py` sums them). Every thread is sampled,
    waiting or not (where the time goes); `gil` (`--profile-cpu`): only the thread holding
    the GIL (where Python's CPU goes)."""
    if into is None:
        yield
        return
    into.mkdir(parents=True, exist_ok=True)
    spies = [
        subprocess.Popen(
            [
                str(Path(sys.executable).with_name("py-spy")),
                "record",
                "--pid",
                str(stack.pid(name)),
                "--subprocesses",
                "--nonblocking",
                "--threads",
                *(["--gil"] if gil else ["--idle"]),
                "--rate",
                "250",
                "--format",
                "raw",
                "--output",
                str(into / f"{database}-{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name in PROFILED
    ]
    time.sleep(0.5)  # py-spy attaches
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            spy.wait(timeout=30)


# -- one database -------------------------------------------------------------------------


def steady_due(start: float, rate: float, count: int) -> list[float]:
    return [start + i / rate for i in range(count)]


def redis_flush(url: str) -> None:
    """The benchmark's own Redis database, emptied so no queued task of an earlier run is taken."""
    import redis

    redis.Redis.from_url(url).flushdb()


def claims_expired(metrics_dir: Path) -> int:
    """automedia_claims_expired_total of the schedules so far, summed over every process
    (core/metrics.py; the processes write it to PROMETHEUS_MULTIPROC_DIR)."""
    from prometheus_client import CollectorRegistry, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(metrics_dir))
    value = registry.get_sample_value(
        "automedia_claims_expired_total", {"queue": "deliveries.deliveryschedule"}
    )
    return int(value or 0)


def run_database(args: argparse.Namespace, database: str, broker: str, tmp: Path) -> DatabaseRun:
    url = POSTGRES_URL if database == "postgresql" else None
    env = dict(ENV) | dict(pair.split("=", 1) for pair in args.env)
    metrics_dir = tmp / f"{database}-{broker}-metrics"
    metrics_dir.mkdir()
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    if broker == "redis":
        redis_flush(args.redis_url)
        env["REDIS_URL"] = args.redis_url
        database = f"{database}+redis"
    steady_n = round(args.steady_rate * args.steady_seconds)
    samples = {"begin": sample()}
    # Registration is not measured: the fakes answer it at once, so that 1,700 approvals by
    # webhook take minutes, not a quarter of an hour. Backlog's and LINE's round trips are
    # set before the measured window opens (set_latencies).
    with Stack(tmp_dir=tmp / database, database_url=url, env=env, backlog_latency=0) as stack:
        stack.add_tenant(SLUG, PROJECT)
        if args.neighbour:
            stack.add_tenant(NEIGHBOUR_SLUG, NEIGHBOUR_PROJECT)
        standard_plan(stack)  # the LINE plan the agency pays for; every other setting is the default
        if args.instagram:
            stack.add_channel_accounts(SLUG)
            stack.instagram.processing_seconds = args.instagram_processing
        start_processes(stack, args.delivery_workers)
        samples["started"] = sample(stack)
        groups = register(stack, steady_n + args.burst + args.campaign, args.register)
        neighbour = (
            register(stack, 2 * args.neighbour, args.register, NEIGHBOUR_PROJECT, NEIGHBOUR_SLUG)
            if args.neighbour
            else {}
        )
        samples["registered"] = sample(stack)
        set_latencies(stack, args)
        keys = list(groups)
        burst_keys, campaign_keys = keys[steady_n : steady_n + args.burst], keys[steady_n + args.burst :]
        burst_offset = args.steady_seconds + BURST_GAP_S
        neighbour_offsets = neighbour_due(list(neighbour), burst_offset)
        start = move_due(stack, keys[:steady_n], burst_keys, args, campaign_keys, offsets=neighbour_offsets)
        neighbour_groups = {neighbour[k]: start + offset for k, offset in neighbour_offsets.items()}
        steady_groups = {
            groups[k]: t
            for k, t in zip(keys[:steady_n], steady_due(start, args.steady_rate, steady_n), strict=True)
        }
        burst_at = start + args.steady_seconds + BURST_GAP_S
        burst_groups = {groups[k]: burst_at for k in burst_keys}
        # Instagram: approved now (a minute or more ahead), due between the burst and the campaign.
        ig_due = float(math.ceil(burst_at + IG_GAP_S))
        ig_keys = platform_phases.instagram_approve(stack, PROJECT, args.instagram, ig_due)
        samples["window"] = sample(stack)
        logged = {name: len(stack.log(name)) for name in PROCESSES}  # startup's lines are not counted
        if steady_groups:
            wait_pushes(stack, steady_groups, BURST_GAP_S - 1)
        samples["steady done"] = sample(stack)
        lead = 1.0 if args.profile or args.profile_machine else 0.0  # for the profilers to attach
        time.sleep(max(0.0, burst_at - time.time() - lead))
        with (
            machine_profiling(args.profile_machine, database),
            profiling(stack, args.profile, database, gil=args.profile_cpu),
            MachineBusy() as machine,
        ):
            time.sleep(max(0.0, burst_at - time.time()))
            samples["burst due"] = sample(stack)
            expired_before = claims_expired(metrics_dir)
            # Checked every 50 ms: "burst done" is the CPU sample that closes the burst's
            # window, and at 0.25 s up to a tenth of a 2 s burst was the bench's own wait.
            wait_pushes(stack, burst_groups | neighbour_groups, args.burst / 10 + 60, BURST_POLL_S)
            samples["burst done"] = sample(stack)
        burst_done = samples["burst done"].at
        halves, busy = machine.per_half_second(burst_at, burst_done), machine.busy(burst_at, burst_done)
        settle(stack, steady_n + args.burst)
        samples["settled"] = sample(stack)
        expired = claims_expired(metrics_dir) - expired_before
        if ig_keys:
            stack.wait_for(
                lambda: platform_phases.instagram_published(stack) >= len(ig_keys), 90, 0.5, "Instagram posts"
            )
        limited_since = (
            platform_phases.update_limit_set(stack, args.update_limit) if args.update_limit else 0.0
        )
        campaign_at, campaign_groups = 0.0, {}
        if campaign_keys:
            campaign_at = campaign_move(stack, campaign_keys)
            campaign_groups = {groups[k]: campaign_at for k in campaign_keys}
            campaign(stack, campaign_groups, args.campaign_latency, args.line_latency)
            settle(stack, len(keys) + len(ig_keys), SETTLE_TIMEOUT_S + 2 * platform_phases.WINDOW_S)
        samples["campaign done"] = sample(stack)
        instagram = platform_phases.instagram_lateness(stack, ig_due) if ig_keys else {}
        writeback = (
            platform_phases.writeback_pacing(
                stack, campaign_keys, campaign_at, args.update_limit, limited_since
            )
            if args.update_limit and campaign_keys
            else {}
        )
        stack.backlog.set_rate_limits(read=10**6, update=10**6)  # the comparison is not paced

        compare_groups = [new_group() for _ in range(steady_n)]
        start = schedule_django_q(stack, compare_groups, args.steady_rate)
        compare = dict(zip(compare_groups, steady_due(start, args.steady_rate, steady_n), strict=True))
        if compare:
            wait_pushes(stack, compare, DJANGO_Q_SCHEDULER_S + 15)
        samples["end"] = sample(stack)
        pushes = stack.line.sent("push")
        twice = sum(1 for n in patched(stack).values() if n > 1)
        errors = {name: error_lines(stack.log(name)[logged[name] :]) for name in PROCESSES}
    results = [
        steady_result("automedia steady", database, pushes, steady_groups),
        burst_result(database, pushes, burst_groups),
        neighbour_result(database, pushes, neighbour_groups),
        burst_result(
            database,
            pushes,
            campaign_groups,
            f"campaign {args.campaign_latency * 1000:.0f} ms",
            CAMPAIGN_TARGET_S,
        ),
        steady_result("django-q2 ONCE steady", database, pushes, compare),
    ]
    return DatabaseRun(
        database,
        args.delivery_workers or delivery_workers(deliverers=1, cores=host_cores()),
        args.register,
        len(keys),
        samples,
        results,
        expired,
        halves,
        busy,
        {name: lines for name, lines in errors.items() if lines},
        twice,
        instagram,
        writeback,
    )


def campaign(stack: Stack, due: dict[str, float], latency: float, after: float) -> None:
    """One tenant's campaign: LINE answers each push `latency` seconds after it took it (a real
    round trip) while the campaign goes out; after `after` seconds again afterwards."""
    at = min(due.values())
    time.sleep(max(0.0, at - time.time() - 2.0))
    stack.line.set_chaos(latency_seconds=latency)
    if time.time() > at - 0.5:
        print("warning: LINE's round trip was set less than 0.5 s before the campaign", file=sys.stderr)
    try:
        wait_pushes(stack, due, len(due) / 10 + 60, BURST_POLL_S)
    finally:
        stack.line.set_chaos(latency_seconds=after)


def set_latencies(stack: Stack, args: argparse.Namespace) -> None:
    """Backlog's and LINE's round trips for everything measured from here on."""
    stack.backlog.set_latency(args.backlog_latency)
    if args.line_latency:
        stack.line.set_chaos(latency_seconds=args.line_latency)


def neighbour_due(keys: list[str], burst_offset: float) -> dict[str, float]:
    """The neighbour's posts: the first half due at the burst's instant, the rest spread over
    the NEIGHBOUR_LATER_S seconds after it ({key: seconds after the window's start})."""
    half = len(keys) // 2
    later = keys[half:]
    due = dict.fromkeys(keys[:half], burst_offset)
    due |= {k: burst_offset + NEIGHBOUR_LATER_S * (i + 1) / len(later) for i, k in enumerate(later)}
    return due


def neighbour_result(database: str, pushes: list, due: dict[str, float]) -> Result:
    """Another tenant's posts beside the burst: steady_result's figures, p99 against its target."""
    result = steady_result("neighbour", database, pushes, due)
    result.targets_met = (
        result.received == result.n and not result.duplicates and result.p99_s <= NEIGHBOUR_P99_TARGET_S
    )
    return result


def error_lines(log: str) -> list[str]:
    """The lines of a process's log at ERROR or CRITICAL, with their time: settings.LOGGING's
    "plain" format (date time LEVEL logger message) and gunicorn's ([date time zone] [pid]
    [LEVEL] message). A scheduler pass that failed, and slept, shows here."""
    levels = {"ERROR", "CRITICAL", "[ERROR]", "[CRITICAL]"}
    return [line for line in log.splitlines() if levels.intersection(line.split(" ", 5)[:5])]


# -- report ---------------------------------------------------------------------------------

ROW = "{:<22} {:<10} {:>5} {:>5} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7}"


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(runs: list[DatabaseRun]) -> None:
    print(
        ROW.format("mode", "database", "n", "got", "p50 s", "p99 s", "max s", "burst s", "per s", "targets")
    )
    for run in runs:
        for r in run.results:
            verdict = "met" if r.targets_met else "MISSED"
            if r.mode.startswith("django-q2"):
                verdict = f"({verdict})"  # shown for comparison; the targets are automedia's
            cells = (fmt(r.p50_s), fmt(r.p99_s), fmt(r.max_s), fmt(r.last_push_s, 2), fmt(r.per_s, 1))
            print(ROW.format(r.mode, r.database, r.n, r.received, *cells, verdict))
    print(
        f"targets: steady p50 <= {P50_TARGET_S} s and p99 <= {P99_TARGET_S} s; "
        f"burst last push <= {BURST_TARGET_S} s after due_at; campaign last push <= {CAMPAIGN_TARGET_S} s; "
        f"neighbour p99 <= {NEIGHBOUR_P99_TARGET_S} s"
    )
    for run in runs:
        dup = sum(r.duplicates for r in run.results)
        print(
            f"\n{run.database}: DELIVERY_WORKERS={run.delivery_workers}, {run.registered} approvals "
            f"registered by {run.registration}, duplicate pushes {dup}"
        )
        print_phases(run.samples)
        burst = next(r for r in run.results if "burst" in r.mode)
        print(
            f"burst pushes per half second after due: {' '.join(map(str, burst.timeline or []))}; "
            f"first push {fmt(burst.first_push_s)} s after due"
        )
        for r in run.results:
            if r.mode.startswith("campaign") and r.first_push_s is not None:
                print(f"{r.mode}: first push {fmt(r.first_push_s)} s after due")
        print(
            "the whole machine's CPUs busy per half second after due (every process, the database "
            f"server's too): {' '.join(f'{c:.2f}' for c in run.machine_halves)}; "
            f"over the burst {fmt(run.machine_busy, 2)}"
        )
        print_cost(run.samples, "burst due", "burst done", burst.n)
        print(
            f"schedules claimed again after their lease ran out (burst due -> settled; the sends and "
            f"their write-backs are {2 * burst.n} claims): {run.claims_expired}"
        )
        print_platforms(run)
        print(f"issues patched more than once (a write-back is one PATCH): {run.patched_twice}")
        print(
            f"ERROR lines in the processes' logs, steady start -> end: {sum(map(len, run.log_errors.values()))}"
        )
        for name, lines in run.log_errors.items():
            for line in lines[:5]:
                print(f"  {name}: {line[:300]}")
    print(f"{os.cpu_count()} CPUs; load average = the 1-minute figure at the end of each phase")


def print_platforms(run: DatabaseRun) -> None:
    """The Instagram posts (target: media_publish at most INSTAGRAM_TARGET_S after due, once,
    never refused as not ready) and the campaign's write-backs under Backlog's update limit."""
    ig = run.instagram
    if ig:
        met = (
            ig["published"] == ig["publish_calls"]
            and not ig["double_publishes"]
            and ig["max_s"] is not None
            and 0.0 <= ig["first_s"]
            and ig["max_s"] <= INSTAGRAM_TARGET_S
        )
        print(
            f"Instagram: {ig['published']} published with {ig['publish_calls']} media_publish calls "
            f"({ig['refused_not_ready']} refused as not ready), media_publish {fmt(ig['first_s'])}-"
            f"{fmt(ig['max_s'])} s after due; target <= {INSTAGRAM_TARGET_S} s {'met' if met else 'MISSED'}"
        )
    wb = run.writeback
    if wb:
        print(
            f"campaign write-backs under {wb['limit_per_min']} writes/min: {wb['written']} of {wb['of']} "
            f"done {fmt(wb['done_s'], 1)} s after due (allowed {wb['allowed_s']:.0f} s), 429s {wb['429s']}, "
            f"{wb['written_before_the_limit']} written before the limit; "
            f"{'met' if wb['met'] else 'MISSED'}"
        )


PHASE_ROW = "{:<34} {:>7} {:>6} " + " {:>9}" * (len(PROCESSES) + 2)


def print_phases(samples: dict[str, Sample]) -> None:
    """Wall time, load and CPU seconds of each process between consecutive samples."""
    print(PHASE_ROW.format("phase (CPU s per process)", "wall s", "load", *PROCESSES, "bench", "postgres"))
    names = list(samples)
    for before, after in zip(names, names[1:], strict=False):
        a, b = samples[before], samples[after]
        cpu = (f"{b.cpu_s[k] - a.cpu_s.get(k, 0.0):.1f}" for k in b.cpu_s)
        print(PHASE_ROW.format(f"{before} -> {after}", f"{b.at - a.at:.1f}", f"{b.load[0]:.2f}", *cpu))


def print_cost(samples: dict[str, Sample], before: str, after: str, deliveries: int) -> None:
    """CPU per delivery of a phase and the share of the machine automedia's processes got
    (the PostgreSQL server is shown apart: it is not automedia's, and on SQLite it is idle)."""
    a, b = samples[before], samples[after]
    used = {k: b.cpu_s[k] - a.cpu_s.get(k, 0.0) for k in b.cpu_s}
    server = used.pop(SERVER, 0.0)
    wall = b.at - a.at
    total = sum(used.values())
    per, cpus = 1000 * total / deliveries, total / wall
    parts = ", ".join(f"{k} {1000 * v / deliveries:.1f}" for k, v in used.items())
    print(
        f"{before} -> {after}: {per:.1f} ms CPU per delivery ({parts}); these processes used "
        f"{cpus:.2f} of {os.cpu_count()} CPUs; PostgreSQL server {1000 * server / deliveries:.1f} ms per "
        f"delivery ({server / wall:.2f} CPUs)"
    )
    print(
        f"burst CPU targets: <= {BURST_CPU_MS_TARGET} ms per delivery "
        f"{'met' if per <= BURST_CPU_MS_TARGET else 'MISSED'}, >= {BURST_CPUS_TARGET} CPUs busy "
        f"{'met' if cpus >= BURST_CPUS_TARGET else 'MISSED'}"
    )


def report(runs: list[DatabaseRun], speed: list[float], *, as_json: bool) -> None:
    """The results on stdout: the table and the machine's speed, or (--json) one JSON object
    holding both, so that `--json` output can be read by a JSON parser as it is."""
    if as_json:
        print(
            json.dumps(
                {"runs": [asdict(r) for r in runs], "cpus": os.cpu_count(), "calibration_s": speed}, indent=2
            )
        )
        return
    print_table(runs)
    print(
        f"machine speed (bench/machine.py): 10M additions in {speed[0]} s at the start, {speed[1]} s at the end"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgres", "both", "all"],
        default="all",
        help="all (default): SQLite + ORM broker, PostgreSQL + ORM broker, PostgreSQL + Redis, one after another",
    )
    parser.add_argument("--steady-rate", type=float, default=10.0, help="deliveries due per second")
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    parser.add_argument("--burst", type=int, default=1000, help="deliveries due at the same instant")
    parser.add_argument(
        "--campaign", type=int, default=100, help="one tenant's deliveries due at one instant after the burst"
    )
    parser.add_argument(
        "--neighbour",
        type=int,
        default=10,
        help="another tenant's posts due at the burst's instant, and as many over the 5 s after it",
    )
    parser.add_argument(
        "--backlog-latency",
        type=float,
        default=0.25,
        help="seconds the fake Backlog takes to answer each call, from the measured window on",
    )
    parser.add_argument(
        "--line-latency",
        type=float,
        default=0.08,
        help="seconds the fake LINE takes to answer each push, from the measured window on",
    )
    parser.add_argument(
        "--campaign-latency",
        type=float,
        default=0.08,
        help="seconds the fake LINE takes to answer a campaign push",
    )
    parser.add_argument(
        "--instagram",
        type=int,
        default=5,
        help="Instagram posts approved a minute or more ahead, due at one second",
    )
    parser.add_argument(
        "--instagram-processing",
        type=float,
        default=8.0,
        help="seconds the fake Instagram takes per container",
    )
    parser.add_argument(
        "--update-limit",
        type=int,
        default=60,
        help="Backlog writes a minute the fake enforces from the campaign on (0: none)",
    )
    parser.add_argument(
        "--delivery-workers",
        type=int,
        default=None,
        help="DELIVERY_WORKERS of the deliverer (default: unset)",
    )
    parser.add_argument(
        "--register",
        choices=["scan", "webhooks"],
        default="webhooks",
        help="how the schedules are made: one approval webhook each, as users approve (default), or one scan",
    )
    parser.add_argument(
        "--broker",
        choices=["orm", "redis"],
        default="orm",
        help="django-q2 broker of --database sqlite/postgres/both: the ORM (embedded default) or Redis",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7", help="flushed at the start")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        help="KEY=VALUE for every process (e.g. DELIVERY_TASK_SIZE=20); repeat",
    )
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="sample the deliverer and the scheduler with py-spy during the burst (collapsed stacks in DIR)",
    )
    parser.add_argument(
        "--profile-cpu", action="store_true", help="with --profile: sample only the thread holding the GIL"
    )
    parser.add_argument(
        "--profile-machine",
        type=Path,
        metavar="DIR",
        help="record every process (the PostgreSQL server and the kernel too) with Linux perf during "
        "the burst (DIR/<database>-machine.perf; needs perf and root)",
    )
    args = parser.parse_args()
    if args.profile_machine and not shutil.which("perf"):
        parser.error("--profile-machine needs Linux perf (Debian: apt-get install linux-perf)")
    return args


def main() -> int:
    args = parse_args()
    # SIGTERM/SIGINT unwind through the `with Stack` blocks: every process is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    setups = {
        "sqlite": [("sqlite", args.broker)],
        "postgres": [("postgresql", args.broker)],
        "both": [("sqlite", args.broker), ("postgresql", args.broker)],
        "all": [("sqlite", "orm"), ("postgresql", "orm"), ("postgresql", "redis")],
    }[args.database]
    began, speed = time.monotonic(), [calibration()]
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="automedia-bench-delivery-") as tmp:
            for database, broker in setups:
                runs.append(run_database(args, database, broker, Path(tmp)))
    finally:
        if any(database == "postgresql" for database, _ in setups):
            from bench.webhook import postgres

            postgres(POSTGRES_URL, create=False)
    speed.append(calibration())
    report(runs, speed, as_json=args.json)
    print(f"total {time.monotonic() - began:.0f} s", file=sys.stderr)
    complete = all(r.received == r.n and not r.duplicates for run in runs for r in run.results)
    if not complete:
        print("FAILED: a push is missing or was sent twice", file=sys.stderr)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())

"""The chaos campaigns: automedia's real processes (sandbox/stack.py's Stack) under faults.

Each campaign starts its own Stack (fresh database, the fakes on loopback), registers its
approved issues the way bench/delivery.py does (one approval webhook each by default, or
one `manage.py scan_backlog`; each gets its reservation comment), moves their due times into one window starting a few
seconds ahead, turns its faults on, and then watches: kills and restarts processes on
its seeded plan, and ends as soon as every delivery reached the fake LINE and was written
back to the fake Backlog, or at its timeout (what is missing then counts as lost).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from bench.chaos.accounting import Patch, Push, Tally, finished, kill_plan, outage_windows, tally
from bench.delivery import PROJECT, SLUG, error_lines, move_due, redis_flush, register, standard_plan
from sandbox.line.records import PUSH
from sandbox.stack import ROOT, Stack

POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/automedia_chaos"
REDIS_URL = "redis://127.0.0.1:6379/12"  # a database of its own, flushed before and after
POLL_S = 0.25
ROUND_OFFSETS_S = (10.0, 30.0, 50.0)  # the window's "round" seconds (10:00:00 …), from its start
ISSUES = "/api/v2/issues/"
# Production defaults, read from .env.example: the Stack's own (a 5 s lease, a fast poll)
# are the e2e tests' and would hide what a crash costs.
FROM_ENV_EXAMPLE = (
    "DELIVERY_LEASE_SECONDS",
    "SCHEDULER_POLL_SECONDS",
    "Q_WORKERS",
    "DELIVERY_WORKERS",
    "LINE_TIMEOUT_SECONDS",
    "BACKLOG_TIMEOUT_SECONDS",
)
HANG_BEYOND_TIMEOUT_S = 5.0  # a hung LINE answer comes this long after automedia gave up
# The campaigns answer each push after LINE's round trip, so that a kill finds deliveries
# in flight (with an instant fake it almost never does), and each Backlog call after
# Backlog's, from the window on (registration is not measured and runs at once).
LINE_ROUND_TRIP_S = 0.08
BACKLOG_ROUND_TRIP_S = 0.25


@dataclass(frozen=True)
class Campaign:
    name: str
    title: str
    database: str  # "postgres+redis" or "sqlite" (the ORM broker)
    n: int  # deliveries
    window_s: float  # their due times spread evenly over this window
    drain_s: float  # timeout: this long after the last due time, what is missing is lost
    schedulers: int = 1
    deliverers: int = 1
    kills: int = 0
    kill_targets: tuple[str, ...] = ()  # "scheduler", "deliverer"
    kill_every_s: float = 8.0  # ± a quarter of it
    outage: tuple[float, float] | None = None  # Backlog: (down s, every s) while deliveries fall due
    line_fail: float = 0.0
    line_hang: float = 0.0
    line_latency: float = 0.0  # s: every LINE answer this long after LINE took the push
    round_share: float = 0.0  # this share of the deliveries due at three round seconds of the window


# Each campaign has a time bound: its window plus its drain, after which what is missing
# counts as lost; setup (fresh database, migrate, registration) comes on top. The LINE
# campaign's drain covers the seed's first two retries (30 s, 2 min); a push that fails
# three times (one in about 40 at 30 %) waits 10 min more: its row is counted as waiting for
# a retry, not lost.
CAMPAIGNS = {
    c.name: c
    for c in (
        Campaign(
            "kill-pg",
            "PostgreSQL + Redis, 2 schedulers + 2 deliverers, kill -9 every ~8 s",
            "postgres+redis",
            n=300,
            window_s=60.0,
            drain_s=130.0,
            schedulers=2,
            deliverers=2,
            kills=7,
            kill_targets=("scheduler", "deliverer"),
            line_latency=LINE_ROUND_TRIP_S,
        ),
        Campaign(
            "campaign-pg",
            "PostgreSQL + Redis, 2 schedulers + 2 deliverers, 10 % due at three round seconds",
            "postgres+redis",
            n=300,
            window_s=60.0,
            drain_s=60.0,
            schedulers=2,
            deliverers=2,
            line_latency=LINE_ROUND_TRIP_S,
            round_share=0.10,
        ),
        Campaign(
            "campaign-pg-kill",
            "the same, kill -9 of a scheduler or deliverer every ~8 s",
            "postgres+redis",
            n=300,
            window_s=60.0,
            drain_s=90.0,
            schedulers=2,
            deliverers=2,
            kills=7,
            kill_targets=("scheduler", "deliverer"),
            line_latency=LINE_ROUND_TRIP_S,
            round_share=0.10,
        ),
        Campaign(
            "campaign-4-deliverers",
            "the same as campaign-pg with 4 deliverers (database connections)",
            "postgres+redis",
            n=300,
            window_s=60.0,
            drain_s=60.0,
            schedulers=2,
            deliverers=4,
            line_latency=LINE_ROUND_TRIP_S,
            round_share=0.10,
        ),
        Campaign(
            "kill-sqlite",
            "SQLite + ORM broker, the deliverer killed 5 times",
            "sqlite",
            n=100,
            window_s=30.0,
            drain_s=130.0,
            kills=5,
            kill_targets=("deliverer",),
            kill_every_s=6.0,
            line_latency=LINE_ROUND_TRIP_S,
        ),
        Campaign(
            "backlog-flap",
            "PostgreSQL + Redis, Backlog answers 503 for 20 s every 40 s",
            "postgres+redis",
            n=100,
            window_s=60.0,
            drain_s=100.0,
            outage=(20.0, 40.0),
            line_latency=LINE_ROUND_TRIP_S,
        ),
        Campaign(
            "line-faults",
            "PostgreSQL + Redis, LINE: 30 % of pushes 500, 5 % accepted then hung",
            "postgres+redis",
            n=100,
            window_s=30.0,
            drain_s=170.0,
            line_fail=0.30,
            line_hang=0.05,
            line_latency=LINE_ROUND_TRIP_S,
        ),
    )
}


def production_env() -> dict[str, str]:
    values = {}
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in FROM_ENV_EXAMPLE:
            values[key.strip()] = value.strip()
    return values | {"LOG_LEVEL": "INFO", "DJANGO_Q_LOG_LEVEL": "WARNING"}


@dataclass
class Supervisor:
    """Keeps the campaign's processes running, as systemd or Kubernetes would: a process
    that is killed (or dies) is started again at once with the same command."""

    stack: Stack
    roles: dict[str, tuple[tuple[str, ...], dict[str, str]]] = field(default_factory=dict)
    killed: int = 0
    died: int = 0

    def start(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.roles[name] = (args, dict(env or {}))
        self.stack.spawn(name, *args, env=env)

    def kill(self, name: str) -> None:
        """kill -9 of the process and its children, then the restart."""
        self.stack.kill(name)
        self.killed += 1
        self._restart(name)

    def revive(self) -> None:
        for name in self.roles:
            if not self.stack.running(name):
                self.died += 1
                self._restart(name)

    def _restart(self, name: str) -> None:
        args, env = self.roles[name]
        self.stack.spawn(name, *args, env=env)


def start_processes(stack: Stack, campaign: Campaign) -> Supervisor:
    """The Procfile's roles: `worker` (default queue: webhooks, reservations), and the
    campaign's schedulers and deliverers, named scheduler-1…, deliverer-1…"""
    supervisor = Supervisor(stack)
    supervisor.start("worker", "qcluster")
    for i in range(1, campaign.deliverers + 1):
        supervisor.start(f"deliverer-{i}", "qcluster", env={"Q_CLUSTER_NAME": "deliveries"})
    for i in range(1, campaign.schedulers + 1):
        supervisor.start(f"scheduler-{i}", "run_scheduler")
        stack.wait_for_log(f"scheduler-{i}", "started")
    return supervisor


def pushes(stack: Stack) -> list[Push]:
    return [
        Push((r.body or {}).get("to", ""), r.received_at, r.accepted, r.status)
        for r in list(stack.line.requests)
        if r.path == PUSH and isinstance(r.body, dict)
    ]


def patches(stack: Stack) -> list[Patch]:
    return [
        Patch(r.path.removeprefix(ISSUES), r.status)
        for r in list(stack.backlog.requests)
        if r.method == "PATCH" and r.path.startswith(ISSUES)
    ]


def run(
    campaign: Campaign, seed: int, tmp: Path, say: Callable[[str], None], registration: str = "webhooks"
) -> Tally:
    rng = random.Random(f"{seed}:{campaign.name}")
    env = production_env()
    # As an operator sets it for what runs: the connection check and the scheduler's spread
    # of a pass over every deliverer's workers read it.
    env["DATABASE_PROCESSES"] = (
        f"web=1,worker=1,deliverer={campaign.deliverers},scheduler={campaign.schedulers}"
    )
    url = None
    if campaign.database == "postgres+redis":
        redis_flush(REDIS_URL)
        env["REDIS_URL"] = REDIS_URL
        url = POSTGRES_URL
    began = time.monotonic()
    try:
        with Stack(tmp_dir=tmp / campaign.name, database_url=url, env=env, backlog_latency=0) as stack:
            stack.add_tenant(SLUG, PROJECT)
            standard_plan(stack)  # every other setting of the tenant is its default
            supervisor = start_processes(stack, campaign)
            groups = register(stack, campaign.n, registration)
            stack.backlog.set_latency(BACKLOG_ROUND_TRIP_S)
            say(f"{campaign.name}: {campaign.n} approvals registered after {time.monotonic() - began:.0f} s")
            keys = list(groups)
            rng.shuffle(keys)  # which deliveries fall on the round seconds
            rounds = round(campaign.n * campaign.round_share)
            rate = (campaign.n - rounds) / campaign.window_s
            start = move_due(
                stack,
                keys[rounds:],
                [],
                SimpleNamespace(steady_rate=rate, steady_seconds=campaign.window_s),
                round_seconds=(keys[:rounds], ROUND_OFFSETS_S),
            )
            due = {groups[key]: start + i / rate for i, key in enumerate(keys[rounds:])}
            due |= {groups[key]: start + ROUND_OFFSETS_S[i % 3] for i, key in enumerate(keys[:rounds])}
            deadline = max(due.values()) + campaign.drain_s
            faults(stack, campaign, rng, env, start, max(due.values()))
            plan = kill_plan(
                rng,
                targets(campaign),
                count=campaign.kills,
                every=campaign.kill_every_s,
                jitter=campaign.kill_every_s / 4,
            )
            watch(stack, supervisor, groups, plan, start, deadline)
            result = tally(
                campaign.name, groups, due, pushes(stack), patches(stack), killed=supervisor.killed
            )
            result.extras.update(extras(stack, campaign, supervisor, groups, result))
    finally:
        if campaign.database == "postgres+redis":
            redis_flush(REDIS_URL)
    result.extras["took"] = f"{time.monotonic() - began:.0f} s"
    return result


def targets(campaign: Campaign) -> list[list[str]]:
    """The processes that may be killed, one list per role."""
    names = {"scheduler": campaign.schedulers, "deliverer": campaign.deliverers}
    return [[f"{role}-{i}" for i in range(1, names[role] + 1)] for role in campaign.kill_targets]


def faults(stack: Stack, campaign: Campaign, rng: random.Random, env: dict, start: float, end: float) -> None:
    if campaign.outage is not None:
        down, every = campaign.outage
        stack.backlog.set_outages(outage_windows(start, every=every, down=down, until=end))
    if campaign.line_fail or campaign.line_hang or campaign.line_latency:
        hang = float(env.get("LINE_TIMEOUT_SECONDS", 10)) + HANG_BEYOND_TIMEOUT_S
        stack.line.set_chaos(
            fail_rate=campaign.line_fail,
            hang_rate=campaign.line_hang,
            hang_seconds=hang,
            seed=rng.randrange(2**32),
            latency_seconds=campaign.line_latency,
        )


def watch(
    stack: Stack,
    supervisor: Supervisor,
    groups: dict[str, str],
    plan: list[tuple[float, str]],
    start: float,
    deadline: float,
) -> None:
    """Kill on the plan (each kill restarted), restart what died; until everything was
    delivered and written back (and every planned kill done), or the deadline."""
    todo = list(plan)
    while True:
        now = time.time()
        while todo and start + todo[0][0] <= now:
            supervisor.kill(todo.pop(0)[1])
        supervisor.revive()
        if not todo and finished(groups, pushes(stack), patches(stack)):
            return
        if now >= deadline:
            return
        time.sleep(POLL_S)


def extras(
    stack: Stack, campaign: Campaign, supervisor: Supervisor, groups: dict[str, str], result: Tally
) -> dict[str, object]:
    found: dict[str, object] = {}
    if supervisor.died:
        found["died unkilled"] = supervisor.died
    if campaign.outage is not None:
        found["Backlog 503s"] = sum(1 for r in list(stack.backlog.requests) if r.status == 503)
    if campaign.line_fail or campaign.line_hang:
        found["LINE faults"] = stack.line.chaos_counts()
    errors = {name: lines for name in supervisor.roles if (lines := error_lines(stack.log(name)))}
    found["ERROR lines"] = sum(len(lines) for lines in errors.values())
    refused = sum("too many clients" in line for lines in errors.values() for line in lines)
    if refused:
        found["connections refused"] = refused
    if result.lost or result.written_back_once + result.written_back_more < result.n:
        found["missing at the end"] = states = missing_states(stack, groups)
        result.count_waiting(states)
    return found


def missing_states(stack: Stack, groups: dict[str, str]) -> dict[str, int]:
    """Where the deliveries not delivered or not written back stand, by their schedule row:
    a retry due later, leased, due but unclaimed, or no row at all."""
    pushed = {p.to for p in pushes(stack) if p.accepted}
    written = {p.issue_key for p in patches(stack) if 200 <= p.status < 300}
    keys = [k for k, g in groups.items() if g not in pushed or k not in written]
    code = (
        "import json\n"
        "from collections import Counter\n"
        "from django.utils import timezone\n"
        "from deliveries.models import DeliverySchedule as S\n"
        f"keys = {keys!r}\n"
        "now = timezone.now()\n"
        "rows = {s.task.issue_key: s for s in S.objects.select_related('task').filter(task__issue_key__in=keys)}\n"
        "def state(s):\n"
        "    if s is None: return 'no schedule row'\n"
        "    if s.lease_until and s.lease_until > now: return f'{s.stage} leased'\n"
        "    if s.due_at > now: return f'{s.stage} retry due later'\n"
        "    return f'{s.stage} due, unclaimed'\n"
        "print(json.dumps(Counter(state(rows.get(k)) for k in keys)))\n"
    )
    return json.loads(stack.shell(code).splitlines()[-1])

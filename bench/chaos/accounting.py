"""The chaos campaign's arithmetic, apart from any process: what the fakes recorded, turned
into delivered once / lost / double / written back once and lateness; the seeded plans of
kills and outages. tests/sandbox/test_chaos_accounting.py checks it."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

LATE_S = 60.0  # the issue's "over 60 s late" count


@dataclass(frozen=True, slots=True)
class Push:
    """One push the fake LINE answered (or held back): its group, arrival, outcome."""

    to: str
    at: float  # time.time() when the request line was read
    accepted: bool  # LINE took it (sent once), whatever the client saw
    status: int


@dataclass(frozen=True, slots=True)
class Patch:
    """One PATCH of an issue the fake Backlog answered (the write-back)."""

    issue_key: str
    status: int


@dataclass
class Tally:
    """One campaign's outcome."""

    campaign: str
    n: int
    delivered_once: int
    lost: int
    double: int
    written_back_once: int
    written_back_more: int
    lateness: list[float]  # sorted, one per delivered group: first accepted push − due time
    resent_409: int  # resends LINE answered "retry key already accepted"
    killed: int = 0
    waiting: int = 0  # not pushed yet, but its row waits for a retry on the seed's ladder: not lost
    extras: dict[str, object] = field(default_factory=dict)

    def count_waiting(self, states: dict[str, int]) -> None:
        """Of the groups not pushed, those whose row waits for its channel retry are not lost."""
        self.waiting = min(self.lost, states.get("deliver retry due later", 0))
        self.lost -= self.waiting

    @property
    def over_late(self) -> int:
        return sum(1 for late in self.lateness if late > LATE_S)

    def line(self) -> str:
        p50, p99, top = (percentile(self.lateness, p) for p in (0.50, 0.99, 1.0))
        extras = "".join(f", {k} {v}" for k, v in self.extras.items())
        return (
            f"{self.campaign}: {self.n} due | delivered once {self.delivered_once}, lost {self.lost}, "
            f"waiting for a retry {self.waiting}, "
            f"double {self.double} | written back once {self.written_back_once}"
            f" (more than once {self.written_back_more}) | lateness p50 {_s(p50)} p99 {_s(p99)} "
            f"max {_s(top)}, over {LATE_S:.0f} s {self.over_late} | killed {self.killed}"
            f" | 409 resends {self.resent_409}{extras}"
        )


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile of sorted values (p in (0, 1]); None for no values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def tally(
    campaign: str,
    groups: Mapping[str, str],
    due: Mapping[str, float],
    pushes: Iterable[Push],
    patches: Iterable[Patch],
    *,
    killed: int = 0,
) -> Tally:
    """`groups`: issue key → the LINE group its delivery pushes to; `due`: group → due time
    (epoch s). A group is delivered once with exactly one accepted push, double with more,
    lost with none; an issue is written back once with exactly one successful (2xx) PATCH.
    Pushes to other groups and 409 answers (a resend of an accepted retry key) send nothing."""
    wanted = set(groups.values())
    accepted: Counter[str] = Counter()
    first: dict[str, float] = {}
    resent = 0
    for push in pushes:
        if push.to not in wanted:
            continue
        if push.status == 409:
            resent += 1
        if push.accepted:
            accepted[push.to] += 1
            first[push.to] = min(first.get(push.to, push.at), push.at)
    written: Counter[str] = Counter(p.issue_key for p in patches if 200 <= p.status < 300)
    return Tally(
        campaign=campaign,
        n=len(groups),
        delivered_once=sum(1 for g in wanted if accepted[g] == 1),
        lost=sum(1 for g in wanted if accepted[g] == 0),
        double=sum(1 for g in wanted if accepted[g] > 1),
        written_back_once=sum(1 for key in groups if written[key] == 1),
        written_back_more=sum(1 for key in groups if written[key] > 1),
        lateness=sorted(first[g] - due[g] for g in first),
        resent_409=resent,
        killed=killed,
    )


def finished(groups: Mapping[str, str], pushes: Iterable[Push], patches: Iterable[Patch]) -> bool:
    """Every group got an accepted push and every issue a successful write-back."""
    pushed = {p.to for p in pushes if p.accepted}
    written = {p.issue_key for p in patches if 200 <= p.status < 300}
    return set(groups.values()) <= pushed and set(groups) <= written


def kill_plan(
    rng: random.Random, targets: Sequence[Sequence[str]], *, count: int, every: float, jitter: float
) -> list[tuple[float, str]]:
    """`count` kills as (seconds from the start, process): about every `every` s (± `jitter`,
    uniform). `targets` holds one list of processes per role (schedulers, deliverers): the
    roles take turns, from a random first one, so that every role is killed although few
    kills are drawn; within its role the process is drawn at random."""
    roles = [list(role) for role in targets if role]
    plan, at, first = [], 0.0, rng.randrange(len(roles)) if roles else 0
    for i in range(count if roles else 0):
        at += rng.uniform(every - jitter, every + jitter)
        plan.append((round(at, 3), rng.choice(roles[(first + i) % len(roles)])))
    return plan


def outage_windows(start: float, *, every: float, down: float, until: float) -> list[tuple[float, float]]:
    """[begin, end) windows of `down` s, one starting every `every` s from `start`, up to `until`."""
    windows = []
    begin = start
    while begin < until:
        windows.append((begin, begin + down))
        begin += every
    return windows

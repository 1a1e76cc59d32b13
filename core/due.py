"""The due-work kernel: claiming due rows under a short lease, renewing and releasing it.

Every queue (delivery schedules, group posts, Backlog and LINE events, effect reports,
token refreshes) claims through these functions; a `Lease` names the queue's own columns.
A claim is never held across an HTTP call: claim, commit, call, record. The scheduler
steps hand what they claimed to django-q2 through one door, `hand_out`. How leases, queued
tokens and take-overs fit together: docs/ARCHITECTURE.md, "The due-work kernel".
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Case, F, Model, Q, QuerySet, Value, When
from django.db.models.functions import Collate
from django_q import tasks as broker_tasks
from django_q.brokers import Broker, get_broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf

from core import metrics
from core.holders import PUSHER, HolderGone, new_holder_token, pusher_token

Choose = Callable[[list[Model]], list[Model]]


@dataclass(frozen=True)
class Lease:
    """Which columns of a queue hold its claim, and for how long a claim holds."""

    length: timedelta | Callable[[], timedelta]  # a callable reads a setting at each claim
    until: str = "lease_until"
    owner: str | None = "claimed_by"  # None: the lease alone is the claim (no token)

    def ends(self, now: datetime) -> datetime:
        return now + (self.length() if callable(self.length) else self.length)

    def free(self, now: datetime) -> Q:
        """Never claimed, the lease has run out, or the claim's holder has died."""
        free = Q(**{f"{self.until}__isnull": True}) | Q(**{f"{self.until}__lte": now})
        return free | self.gone() if self.owner else free

    def held(self, now: datetime) -> Q:
        """Under a live lease (in flight) of a live holder."""
        live = Q(**{f"{self.until}__gt": now})
        return live & ~self.gone() if self.owner else live

    def gone(self) -> Q:
        """The claim's token names a holder whose lock is free (core/holders.py)."""
        return Q(HolderGone(self.owner))

    def mine(self, owner: str) -> Q:
        return Q(**self.owned(owner))

    def owned(self, owner: str) -> dict:
        """The columns of a claim `owner` holds (none for a queue without tokens)."""
        return {self.owner: owner} if self.owner else {}

    def taken(self, *, now: datetime, owner: str | None = None) -> dict:
        """The UPDATE that takes rows."""
        return {self.until: self.ends(now), **({self.owner: owner} if self.owner else {})}

    def freed(self) -> dict:
        """The UPDATE that gives rows back."""
        return {self.until: None, **({self.owner: ""} if self.owner else {})}


QUEUED = "q"  # the prefix of a claim's token while its task waits in the broker
_MADE_DIGITS = 13  # a queued token's time: microseconds since the epoch in hex (until 2112)
_QUEUED_LENGTH = 33  # QUEUED, then 32 digits: the time's and random ones
_TAIL = 23  # the last digits of a queued token, kept by the token a pusher gives it
HANDED = "handed_claims"  # the attribute `handed` sets on a task function


def new_token(*, queued: bool = False) -> str:
    """A claim's token: a running one names this process's holder (core/holders.py), so its
    claims are free the moment the process dies; a queued one is held by no process (its task
    waits in the broker): `QUEUED`, the time it was made, then random digits, so queued
    tokens sort by when they were made (same length, same digits)."""
    if not queued:
        return new_holder_token()
    return f"{QUEUED}{time.time_ns() // 1000:0{_MADE_DIGITS}x}{uuid.uuid4().hex[_MADE_DIGITS:]}"


def queued_at(token: str) -> datetime | None:
    """When a queued token was made; None for any other token."""
    if not token.startswith(QUEUED):
        return None
    try:
        return datetime.fromtimestamp(int(token[1 : 1 + _MADE_DIGITS], 16) / 1e6, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def waiting(lease: Lease) -> Q:
    """Claims whose task no worker has started yet: waiting in the broker (a queued token) or
    taken from it by a pusher (a pusher's token, `prefetch`)."""
    return Q(**{f"{lease.owner}__startswith": QUEUED}) | Q(**{f"{lease.owner}__startswith": PUSHER})


def handed(model: type[Model], lease: Lease) -> Callable:
    """Marks a task function whose arguments carry queued claims of `model` under `lease`:
    the pusher that takes the task from the broker makes them its own (`prefetch`)."""

    def mark(func: Callable) -> Callable:
        setattr(func, HANDED, (model, lease))
        return func

    return mark


def queued_tokens(value: object) -> set[str]:
    """The queued tokens in a task's arguments (lists, tuples and dicts are searched)."""
    if isinstance(value, str):
        return {value} if len(value) == _QUEUED_LENGTH and value.startswith(QUEUED) else set()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*(queued_tokens(item) for item in value))
    return set()


def prefetch(rows: QuerySet | type[Model], *, tokens: list[str], now: datetime, lease: Lease) -> int:
    """A pusher took from the broker the task of these queued claims: the rows still claimed
    with them become the pusher's, under a token naming its holder (core/holders.py) that
    ends as the queued one did (how the task's worker still knows them, `take_over`), with a
    fresh lease. A task taken from the broker waits in its cluster's own queue until a
    worker is free, and dies with the cluster: its claims are then free at once, not at the
    lease's end. Returns how many rows changed."""
    new = {token: pusher_token(token[-_TAIL:]) for token in tokens if token.startswith(QUEUED)}
    if not new or not lease.owner or None in new.values():
        return 0
    owner = lease.owner
    if len(new) == 1:
        value = next(iter(new.values()))
    else:
        value = Case(*(When(**{owner: token}, then=Value(mine)) for token, mine in new.items()))
    changed = {owner: value, lease.until: lease.ends(now)}
    return _rows(rows).filter(**{f"{owner}__in": list(new)}).update(**changed)


def _rows(rows: QuerySet | type[Model]) -> QuerySet:
    return rows.objects.all() if isinstance(rows, type) else rows


def any_free(rows: QuerySet | type[Model], *, now: datetime, lease: Lease) -> bool:
    """Whether a claim would find anything among `rows`: one read, no transaction. Every
    queue's step runs on each scheduler pass, so an idle one must cost no more than this
    (on SQLite a claim's transaction takes the write lock)."""
    return _rows(rows).filter(lease.free(now)).exists()


def due_locked(rows: QuerySet | type[Model], *, now: datetime, lease: Lease) -> QuerySet:
    """The free rows among `rows`; on PostgreSQL also locked, skipping rows another
    claimer has locked. Read it inside `transaction.atomic()`."""
    free = _rows(rows).filter(lease.free(now))
    if connection.vendor == "postgresql":
        free = free.select_for_update(skip_locked=True, of=("self",))
    return free


def claim(
    rows: QuerySet | type[Model],
    *,
    now: datetime,
    lease: Lease,
    limit: int,
    owner: str | None = None,
    read: int | None = None,
    choose: Choose | None = None,
    queued: bool = False,
    group: int | Callable[[int], int] = 1,
    **changes,
) -> list[tuple[int, str]]:
    """Claim up to `limit` of `rows` (due rows, in the order to take them) that are free.

    Returns (pk, token) pairs: `owner` for every row when given, else a new token per row
    ("" when the lease has no owner column; a queued one with `queued`, for rows handed to
    the broker; with `group`, each run of that many rows shares one, as the rows of one
    task do; a callable `group` is given how many rows were chosen). `read`: how many
    candidates to read (default `limit`); `choose`: which of them to take (e.g. a
    per-tenant capacity), at most `limit` are. `changes`: more columns set by the same
    UPDATE. A pass with nothing free is one read and no transaction.
    """
    rows = _rows(rows)
    if not any_free(rows, now=now, lease=lease):  # an idle pass: no transaction, no `choose`
        return []
    token_of = lambda: owner or (new_token(queued=queued) if lease.owner else "")  # noqa: E731
    skip_locked = connection.vendor == "postgresql"
    with transaction.atomic():
        candidates = due_locked(rows, now=now, lease=lease) if skip_locked else rows.filter(lease.free(now))
        chosen_rows = _candidates(candidates, limit, read, choose)
        chosen = [row.pk for row in chosen_rows]
        size = max(1, group(len(chosen)) if callable(group) else group)
        runs = [(token_of(), chosen[start : start + size]) for start in range(0, len(chosen), size)]
        claimed = [(pk, token) for token, pks in runs for pk in pks]
        if not claimed:
            return []
        taken = lease.taken(now=now)
        tokens = {token for token, _ in runs}
        if lease.owner and len(tokens) > 1:  # a branch per token, not per row: the ORM's CPU
            taken[lease.owner] = Case(*(When(pk__in=pks, then=Value(token)) for token, pks in runs))
        elif lease.owner:
            taken[lease.owner] = next(iter(tokens))
        target = rows.model.objects.filter(lease.free(now), pk__in=[pk for pk, _ in claimed])
        if target.update(**taken, **changes) == len(claimed):
            expired_claims_count(chosen_rows, lease)
            return claimed
        ours = {f"{lease.owner}__in": tokens} if lease.owner else {lease.until: taken[lease.until]}
        won = set(
            target.model.objects.filter(pk__in=[pk for pk, _ in claimed], **ours).values_list("pk", flat=True)
        )
        expired_claims_count([row for row in chosen_rows if row.pk in won], lease)
        return [(pk, token) for pk, token in claimed if pk in won]


def expired_claims_count(rows: list[Model], lease: Lease) -> None:
    """Count (core/metrics.py) the claimed rows that an earlier claim held until its lease ran
    out: a released row has no lease end. Read from what the candidates' query loaded (a
    deferred column is not read for it)."""
    if rows:
        again = sum(1 for row in rows if row.__dict__.get(lease.until) is not None)
        metrics.claimed_again(rows[0]._meta.label_lower, again)


def _candidates(rows: QuerySet, limit: int, read: int | None, choose: Choose | None) -> list[Model]:
    candidates = list(rows[: read or limit])
    return (choose(candidates) if choose else candidates)[:limit]


def claim_one(
    rows: QuerySet | type[Model],
    *,
    pk: int,
    now: datetime,
    lease: Lease,
    owner: str | None = None,
    **changes,
) -> bool:
    """Claim one row if it is among `rows` and free: a conditional UPDATE that must change
    exactly one row (portable). False: someone else holds it, or it is no longer due."""
    taken = lease.taken(now=now, owner=owner)
    return _rows(rows).filter(lease.free(now), pk=pk).update(**taken, **changes) == 1


def take_over(
    rows: QuerySet | type[Model], *, pks: list[int], now: datetime, lease: Lease, token: str | list[str]
) -> tuple[str, list[int]]:
    """A worker starts on rows handed to it with `token` (or one of several tokens): those
    still claimed with it, or by a claim still waiting in the broker (any queued token),
    become this worker's, under one new token and a fresh lease, in one UPDATE; so do those
    a pusher took with one of the queued `token`s (`prefetch`). Returns
    (the new token, the pks taken). A task that waited long renews the queue behind it
    (`_renew_behind`)."""
    rows, mine = _rows(rows), new_token()
    tokens = [token] if isinstance(token, str) else list(token)
    _renew_behind(rows, tokens=tokens, now=now, lease=lease)
    waiting = Q(**{f"{lease.owner}__in": tokens}) | Q(**{f"{lease.owner}__startswith": QUEUED})
    for queued in {t for t in tokens if t.startswith(QUEUED)}:
        waiting |= Q(**{f"{lease.owner}__startswith": PUSHER, f"{lease.owner}__endswith": queued[-_TAIL:]})
    taken = rows.filter(waiting, pk__in=pks).update(**lease.taken(now=now, owner=mine))
    if taken == len(set(pks)):
        return mine, list(pks)
    held = set(rows.filter(lease.mine(mine), pk__in=pks).values_list("pk", flat=True))
    return mine, [pk for pk in pks if pk in held]


def _renew_behind(rows: QuerySet, *, tokens: list[str], now: datetime, lease: Lease) -> None:
    """A task that waited in the broker half a lease or more renews the live queued claims
    made after its own: their tasks wait behind it and nobody else renews them, so their
    leases would run out in the broker and their rows be claimed twice. A claim whose task
    was lost is renewed only by the tasks made before it, so its lease still runs out."""
    made = sorted(t for t in tokens if t.startswith(QUEUED))
    oldest = queued_at(made[0]) if made and lease.owner else None
    half = (lease.ends(now) - now) / 2
    if oldest is None or now - oldest < half:
        return  # a short queue: every claim behind this one has more than half its lease
    owner = F(lease.owner)
    if connection.vendor == "postgresql":  # byte order, whatever the database's collation
        owner = Collate(owner, "C")
    behind = rows.alias(_token=owner).filter(
        Q(**{f"{lease.owner}__startswith": QUEUED}),
        _token__gt=made[-1],
        **{f"{lease.until}__gt": now, f"{lease.until}__lt": now + half},
    )
    behind.update(**{lease.until: lease.ends(now)})


def renew(rows: QuerySet | type[Model], *, pk: int, now: datetime, lease: Lease, owner: str) -> bool:
    """Extend our own claim (before each slow step); False when the claim was lost."""
    return _rows(rows).filter(lease.mine(owner), pk=pk).update(**{lease.until: lease.ends(now)}) == 1


def release(
    rows: QuerySet | type[Model], *, pk: int, lease: Lease, owner: str | None = None, **changes
) -> bool:
    """Give the row back (with `changes`, e.g. a new due time) if we still hold it.
    Without an owner column the lease is freed unconditionally."""
    mine = lease.mine(owner) if owner else Q()
    return _rows(rows).filter(mine, pk=pk).update(**lease.freed(), **changes) == 1


@contextlib.contextmanager
def enqueued_together(broker: Broker) -> Iterator[None]:
    """The tasks enqueued inside on `broker` are committed together when it is the ORM
    broker (one transaction: on SQLite, one turn of the write lock); Redis is unchanged, and
    so is `sync` (Q_SYNC, tests), where each task runs at once, in its caller."""
    if isinstance(broker, ORM) and not Conf.SYNC:
        # core/orm_broker.py's BulkORM wakes an idle pusher once, at the commit
        notifying = getattr(broker, "notifying_once", None)
        once = notifying() if notifying else contextlib.nullcontext()
        with transaction.atomic(using=Conf.ORM), once:
            yield
    else:
        yield


@functools.cache
def queue_broker(queue: str | None) -> Broker:
    """The broker of django-q2's queue `queue` (None: the default queue), made once per
    process. Without it `async_task` makes one per task, and the Redis broker opens a new
    connection each time: hundreds a second through a burst."""
    return get_broker(queue)


def hand_out(func: str, tasks: Iterable[tuple], *, queue: str | None = None) -> int:
    """A scheduler step hands its claims to workers: one task of `func` (a dotted path) per
    tuple of positional arguments in `tasks`, on `queue` (None: the default queue), through
    the queue's one broker, enqueued together. Returns how many tasks went out. A pass with
    none opens no transaction (on SQLite, no turn at the write lock)."""
    tasks = list(tasks)
    if not tasks:
        return 0
    broker = queue_broker(queue)
    where = {"cluster": queue} if queue else {}  # None: django-q2's default cluster
    with enqueued_together(broker):
        for args in tasks:
            broker_tasks.async_task(func, *args, broker=broker, **where)
    return len(tasks)


def per_token(claimed: Iterable[tuple[int, str]]) -> list[tuple[list[tuple[int, str]]]]:
    """Claimed (pk, token) pairs as `hand_out`'s tasks, one per token: each run of rows that
    core/due.py `claim` gave one token (its `group`) goes to one task, as its one argument."""
    return [(list(run),) for _, run in itertools.groupby(claimed, key=lambda pair: pair[1])]

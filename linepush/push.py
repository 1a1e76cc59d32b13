"""Claiming the group push queue through the delivery scheduler (sub-second, seed 003 §6).

`run_scheduler` calls `push_step` on every pass: it claims due items under a lease and
decides in one short transaction what needs the database (the group's opt-in, the per-group
and per-tenant rate limits, the monthly quota), reserving the item's place in those windows.
Workers then send them (linepush/sending.py) with each item's stored `X-Line-Retry-Key`, so
a resend after a crash is LINE's 409, which is `sent`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Value
from django.db.models.functions import Coalesce

from core.due import any_free, due_locked, expired_claims_count, hand_out, new_token, waiting
from deliveries.publish.scheduler import DELIVERY_QUEUE
from deliveries.scheduler_steps import Pass
from line.models import LineMonthlyUsage, LinePushSettings, LineSource
from line.usage import month_of, quota_limit
from linepush.member_counts import member_counts_fill
from linepush.models import LinePushItem
from linepush.services import quota_near

Status = LinePushItem.Status
PUSH_QUEUE = DELIVERY_QUEUE  # group posts go to the deliveries queue (and its broker)
# A post to a group whose member count is not known yet looks again after this.
UNCOUNTED_WAIT = timedelta(seconds=5)
PUSH_LEASE = LinePushItem.LEASE  # lease_until / claimed_by, as DeliverySchedule


# -- claiming -----------------------------------------------------------------------------


@dataclass
class Claim:
    """Items of one tenant claimed together; a worker task sends them."""

    token: str
    item_ids: list[int]
    near_quota: bool = False  # the month's count reached 80 % unwarned: the worker warns


@dataclass
class _Tenant:
    """What the claim knows about one tenant while it decides a batch."""

    push: LinePushSettings
    usage: LineMonthlyUsage
    limit: int | None
    in_window: int
    reserved_messages: int = 0


@dataclass
class _Decisions:
    # tenant id → [(item, messages it costs)]
    reserved: dict[int, list[tuple[LinePushItem, int]]] = field(default_factory=lambda: defaultdict(list))
    ended: list[tuple[LinePushItem, str, str]] = field(default_factory=list)  # item, status, reason
    tenants: dict[int, _Tenant] = field(default_factory=dict)  # as the decisions leave them


def push_step(*, now: datetime, limit: int) -> Pass:
    """One scheduler pass for the push queue: claim due items and hand them to workers.
    HELD when due items wait only for room under LINEPUSH_MAX_IN_FLIGHT: the workers free it
    as they start their tasks, so the loop looks again within SCHEDULER_HELD_POLL_SECONDS
    rather than its poll (at 0.5 s, the cap's 500 items a poll bounded a drain to ~1,000/s)."""
    room = _room(now=now, limit=limit)
    if room is None:
        return Pass.IDLE
    if not room:
        return Pass.HELD
    claims = _claim(now, room)
    # The deliveries queue (settings Q_CLUSTER ALT_CLUSTERS): due posts, like due deliveries,
    # never wait behind a burst of webhook processing. A tenant's claim is one token, cut
    # into tasks of LINEPUSH_BATCH_SIZE items.
    tasks = [(claim.item_ids, claim.token, claim.near_quota) for claim in claims]
    hand_out("linepush.tasks.push_send", tasks, queue=PUSH_QUEUE)
    return Pass.WORKED if claims else Pass.IDLE


def push_claim(*, now: datetime, limit: int) -> list[Claim]:
    """Claim due items (at most LINEPUSH_MAX_IN_FLIGHT waiting for a worker) and decide each."""
    room = _room(now=now, limit=limit)
    return _claim(now, room) if room else []


def _room(*, now: datetime, limit: int) -> int | None:
    """How many due items this pass may claim; None when none is due and free.

    While some wait, it claims only when a whole pass (`limit`) fits: a worker taking over a
    batch would otherwise let every pass claim one batch, twice the passes for as many items.
    A pass with nothing due ends after one read, without a transaction (core/due.py `any_free`)."""
    if not any_free(_due(now), now=now, lease=PUSH_LEASE):
        return None
    waiting = _waiting(now)
    room = min(limit, settings.LINEPUSH_MAX_IN_FLIGHT - waiting)
    return 0 if room <= 0 or (waiting and room < limit) else room


def _claim(now: datetime, room: int) -> list[Claim]:
    member_counts_fill(now=now)  # HTTP to LINE: before the transaction, never inside it
    with transaction.atomic():
        candidates = _candidates(now, room)
        if not candidates:
            return []
        expired_claims_count(candidates, PUSH_LEASE)
        decisions = _decide(candidates, now)
        return _apply(decisions, now)


def _waiting(now: datetime) -> int:
    """Claimed items whose task no worker has started: it waits in the broker (a queued
    token, core/due.py) or in a cluster's queue (a pusher's token).

    That queue is what the cap bounds: it is what a due delivery behind it waits for, and
    nobody renews its leases. Items a worker has taken over are not counted, so the next
    batches are claimed while it sends; counting them left the workers idle until the
    scheduler's next poll."""
    held = LinePushItem.objects.filter(PUSH_LEASE.held(now), status=Status.PENDING)
    return held.filter(waiting(PUSH_LEASE)).count()


def _due(now: datetime):
    return LinePushItem.objects.filter(status=Status.PENDING, scheduled_at__lte=now)


# The columns the decision reads (`_verdict`, the lease's expiry count, a retry key to derive):
# neither the payload nor the other timestamps, whose decoding costs the claim's CPU per row.
DECIDING_READS = (
    "tenant_id",
    "ext_group_id",
    "trigger_type",
    "status",
    "first_attempt_at",
    "lease_until",
    "claimed_by",
    "retry_key",
    "dedupe_key",
)


def _candidates(now: datetime, room: int) -> list[LinePushItem]:
    rows = due_locked(_due(now), now=now, lease=PUSH_LEASE).order_by("scheduled_at", "id")
    return list(rows.only(*DECIDING_READS)[:room])


def _decide(items: list[LinePushItem], now: datetime) -> _Decisions:
    tenants = _tenant_states(items, now)
    sources = _sources(items)
    windows = _group_windows(items, sources, now)
    decisions = _Decisions(tenants=tenants)
    for item in items:
        source = sources.get((item.tenant_id, item.ext_group_id))
        verdict = _verdict(item, source, tenants[item.tenant_id], windows, now)
        if verdict is None:
            decisions.reserved[item.tenant_id].append((item, source.cost))
        else:
            decisions.ended.append((item, *verdict))
    return decisions


def _verdict(item, source, state: _Tenant, windows: Counter, now: datetime) -> tuple[str, str] | None:
    """None = reserve a place and send; otherwise (end status, reason), PENDING = not yet."""
    if item.retry_expired(now):
        return Status.FAILED, (
            "最初の送信から 23 時間以上たったため再送しません（LINE の再送キーは 24 時間で失効し、"
            "二重投稿を防げなくなります）。LINE で投稿済みか確認してください"
        )
    refusal = item.may_send(source)
    if refusal:
        return Status.SKIPPED, refusal
    if source.member_count is None:
        # Counted as one member, a push to a group of hundreds would slip under the quota:
        # it waits until LINE gives the count (linepush/member_counts.py).
        return Status.PENDING, "グループのメンバー数を LINE に確認中のため待機しています"
    key = (item.tenant_id, item.ext_group_id)
    if windows[key] >= source.rate_limit_count:
        return Status.FAILED, (
            f"レート制限: このグループへの投稿は {_minutes(source.rate_limit_window_seconds)}に "
            f"{source.rate_limit_count} 件までです（再送しません）"
        )
    push = state.push
    if push.tenant_rate_limit is not None and state.in_window >= push.tenant_rate_limit:
        return Status.FAILED, (
            f"レート制限: このテナントの投稿は {_minutes(push.tenant_rate_window_seconds)}に "
            f"{push.tenant_rate_limit} 件までです（再送しません）"
        )
    used = state.usage.messages + state.reserved_messages
    if state.limit is not None and used + source.cost > state.limit:
        return Status.HELD, (
            f"今月の LINE メッセージ上限を超えるため保留しました（{state.usage.month}: 使用 {used:,} / 上限 "
            f"{state.limit:,} 通、この投稿は {source.cost} 人分）。プランを変更するか来月まで待つと、"
            "毎日の上限確認で自動的に再開します"
        )
    windows[key] += 1
    state.in_window += 1
    state.reserved_messages += source.cost
    return None


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} 分間" if seconds % 60 == 0 else f"{seconds} 秒間"


def _tenant_states(items: list[LinePushItem], now: datetime) -> dict[int, _Tenant]:
    states = {}
    batch = [i.pk for i in items]
    for tenant_id in sorted({i.tenant_id for i in items}):  # id order: schedulers lock alike
        push = _locked_settings(tenant_id)
        usage, _ = LineMonthlyUsage.objects.get_or_create(tenant_id=tenant_id, month=month_of(now, push.zone))
        in_window = 0
        if push.tenant_rate_limit is not None:
            since = now - timedelta(seconds=push.tenant_rate_window_seconds)
            in_window = _window_rows(since).filter(tenant_id=tenant_id).exclude(pk__in=batch).count()
        states[tenant_id] = _Tenant(push, usage, quota_limit(push=push, usage=usage), in_window)
    return states


def _locked_settings(tenant_id: int) -> LinePushSettings:
    """The tenant's settings, locked on PostgreSQL so that two schedulers never count the same
    rate-limit window at once (SQLite's IMMEDIATE transactions already run one at a time)."""
    LinePushSettings.objects.get_or_create(tenant_id=tenant_id)
    rows = LinePushSettings.objects.select_related("plan").filter(tenant_id=tenant_id)
    if connection.vendor == "postgresql":
        rows = rows.select_for_update(of=("self",))
    return rows.get()


def _window_rows(since: datetime):
    """Items holding a place in a rate-limit window: sent, or being (re)tried, since `since`."""
    return LinePushItem.objects.filter(reserved_at__gte=since, status__in=[Status.SENT, Status.PENDING])


def _sources(items: list[LinePushItem]) -> dict[tuple[int, str], LineSource]:
    rows = LineSource.objects.filter(
        tenant_id__in={i.tenant_id for i in items}, group_id__in={i.ext_group_id for i in items}
    )
    return {(s.tenant_id, s.group_id): s for s in rows}


def _group_windows(items, sources, now: datetime) -> Counter:
    """Places taken in each group's window, not counting the items being decided."""
    counts: Counter = Counter()
    by_window: dict[int, set] = defaultdict(set)
    for source in sources.values():
        by_window[source.rate_limit_window_seconds].add(source.group_id)
    batch = [i.pk for i in items]
    for seconds, groups in by_window.items():
        rows = (
            _window_rows(now - timedelta(seconds=seconds))
            .filter(tenant_id__in={i.tenant_id for i in items}, ext_group_id__in=groups)
            .exclude(pk__in=batch)
            .values("tenant_id", "ext_group_id")
            .annotate(n=Count("id"))
        )
        for row in rows:
            counts[(row["tenant_id"], row["ext_group_id"])] = row["n"]
    return counts


def _apply(decisions: _Decisions, now: datetime) -> list[Claim]:
    for item, status, reason in decisions.ended:
        later = {"scheduled_at": now + UNCOUNTED_WAIT} if status == Status.PENDING else {}
        LinePushItem.objects.filter(pk=item.pk).update(status=status, last_error=reason, **later)
    claims = []
    for tenant_id, items in decisions.reserved.items():
        claims += _reserve(decisions.tenants[tenant_id], items, now)
    return claims


def _reserve(state: _Tenant, items: list[tuple[LinePushItem, int]], now: datetime) -> list[Claim]:
    _keep_retry_keys([item for item, _ in items])
    by_cost: dict[int, list[int]] = defaultdict(list)
    for item, cost in items:
        by_cost[cost].append(item.pk)
    token = new_token(queued=True)
    for cost, ids in by_cost.items():  # the rows are locked (PostgreSQL) or ours alone (SQLite)
        LinePushItem.objects.filter(pk__in=ids).update(
            **PUSH_LEASE.taken(now=now, owner=token),
            reserved_at=now,
            reserved_cost=cost,
            first_attempt_at=Coalesce(F("first_attempt_at"), Value(now)),
        )
    # An item whose earlier claim expired unrecorded still holds its reservation.
    total = sum(cost for item, cost in items if not item.claimed_by)
    LineMonthlyUsage.objects.filter(pk=state.usage.pk).update(messages=F("messages") + total)
    # The month's count as this pass leaves it: the worker reads it only to warn at 80 %.
    used = state.usage.messages + state.reserved_messages
    near_quota = quota_near(usage=state.usage, messages=used, limit=state.limit)
    ids = [item.pk for item, _ in items]
    size = settings.LINEPUSH_BATCH_SIZE
    return [Claim(token, ids[i : i + size], near_quota) for i in range(0, len(ids), size)]


def _keep_retry_keys(items: list[LinePushItem]) -> None:
    """An item made without `save()` (bulk_create) gets its retry key before its first attempt."""
    keyless = [item for item in items if not item.retry_key]
    for item in keyless:
        item.retry_key = item.derived_retry_key()
    LinePushItem.objects.bulk_update(keyless, ["retry_key"])

"""Sending the group push queue through the delivery scheduler (sub-second, seed 003 §6).

`run_scheduler` calls `push_step` on every pass: it claims due items under a lease
and decides, in one short transaction, everything that needs the database — the
group's opt-in, the per-group and per-tenant rate limits, the monthly quota — and
reserves the item's place in those windows. django-q2 workers then push each claimed
item (`push_send`) with the item's stored `X-Line-Retry-Key` (uuid5 of tenant and
dedupe key, fixed at creation), and record the outcome. No transaction is held across
an HTTP call.

Exactly once: a key LINE already accepted answers 409, which is `sent`; a worker that
dies after the push leaves its claim to expire, and the resend with the same key is
that 409. LINE keeps a retry key 24 h, so an item first tried more than 23 h ago is
failed instead of being resent blind.

Concurrency: PostgreSQL claims with `SKIP LOCKED` and locks the tenants' settings
rows (in id order) so that two schedulers never count the same rate-limit window at
once. SQLite runs every transaction as `BEGIN IMMEDIATE` (settings), so the claim is
the only writer while it runs.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, F, Q, Value, When
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from core.models import Tenant
from deliveries.channels.base import SendResult, TransportError
from deliveries.channels.line.transport import LineTransport, line_transport
from linepush.models import LineMonthlyUsage, LinePushAttempt, LinePushItem, LinePushSettings, LineSource
from linepush.services import month_of, quota_limit, quota_warn_once

Status = LinePushItem.Status
PUSH_QUEUE = "deliveries"


def _lease() -> timedelta:
    return timedelta(seconds=settings.LINEPUSH_LEASE_SECONDS)


def _due(now: datetime) -> Q:
    free = Q(lease_until__isnull=True) | Q(lease_until__lte=now)
    return Q(status=Status.PENDING, scheduled_at__lte=now) & free


# -- claiming -----------------------------------------------------------------------------


@dataclass
class Claim:
    """Items of one tenant claimed together; a worker task sends them."""

    token: str
    item_ids: list[int]


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


def push_step(*, now: datetime, limit: int) -> bool:
    """One scheduler pass for the push queue: claim due items and hand them to workers."""
    from django_q.tasks import async_task

    claims = push_claim(now=now, limit=limit)
    for claim in claims:
        # The deliveries queue (settings Q_CLUSTER ALT_CLUSTERS): due posts, like due
        # deliveries, never wait behind a burst of webhook processing.
        async_task("linepush.tasks.push_send", claim.item_ids, claim.token, cluster=PUSH_QUEUE)
    return bool(claims)


def push_claim(*, now: datetime, limit: int) -> list[Claim]:
    """Claim due items (at most LINEPUSH_MAX_IN_FLIGHT under lease at once) and decide each."""
    room = min(limit, settings.LINEPUSH_MAX_IN_FLIGHT - _in_flight(now))
    if room <= 0:
        return []
    with transaction.atomic():
        candidates = _candidates(now, room)
        if not candidates:
            return []
        decisions = _decide(candidates, now)
        claims = _apply(decisions, now)
    return claims


def _in_flight(now: datetime) -> int:
    return LinePushItem.objects.filter(status=Status.PENDING, lease_until__gt=now).count()


def _candidates(now: datetime, room: int) -> list[LinePushItem]:
    rows = LinePushItem.objects.filter(_due(now)).order_by("scheduled_at", "id")
    if connection.vendor == "postgresql":
        rows = rows.select_for_update(skip_locked=True, of=("self",))
    return list(rows.defer("payload")[:room])


def _decide(items: list[LinePushItem], now: datetime) -> _Decisions:
    tenants = _tenant_states(items, now)
    sources = _sources(items)
    windows = _group_windows(items, sources, now)
    decisions = _Decisions()
    for item in items:
        source = sources.get((item.tenant_id, item.ext_group_id))
        verdict = _verdict(item, source, tenants[item.tenant_id], windows, now)
        if verdict is None:
            decisions.reserved[item.tenant_id].append((item, source.cost))
        else:
            decisions.ended.append((item, *verdict))
    return decisions


def _verdict(item, source, state: _Tenant, windows: Counter, now: datetime) -> tuple[str, str] | None:
    """None = reserve a place and send; otherwise (end status, reason)."""
    if item.retry_expired(now):
        return Status.FAILED, (
            "最初の送信から 23 時間以上たったため再送しません（LINE の再送キーは 24 時間で失効し、"
            "二重投稿を防げなくなります）。LINE で投稿済みか確認してください"
        )
    refusal = item.may_send(source)
    if refusal:
        return Status.SKIPPED, refusal
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
        LinePushItem.objects.filter(pk=item.pk).update(status=status, last_error=reason)
    claims = []
    for tenant_id, items in decisions.reserved.items():
        claims += _reserve(tenant_id, items, now)
    return claims


def _reserve(tenant_id: int, items: list[tuple[LinePushItem, int]], now: datetime) -> list[Claim]:
    _keep_retry_keys([item for item, _ in items])
    by_cost: dict[int, list[int]] = defaultdict(list)
    for item, cost in items:
        by_cost[cost].append(item.pk)
    token = uuid.uuid4().hex
    for cost, ids in by_cost.items():
        LinePushItem.objects.filter(pk__in=ids).update(
            lease_until=now + _lease(),
            claimed_by=token,
            reserved_at=now,
            reserved_cost=cost,
            first_attempt_at=Coalesce(F("first_attempt_at"), Value(now)),
        )
    total = sum(cost * len(ids) for cost, ids in by_cost.items())
    push = LinePushSettings.objects.get(tenant_id=tenant_id)
    LineMonthlyUsage.objects.filter(tenant_id=tenant_id, month=month_of(now, push.zone)).update(
        messages=F("messages") + total
    )
    ids = [item.pk for item, _ in items]
    size = settings.LINEPUSH_BATCH_SIZE
    return [Claim(token=token, item_ids=ids[i : i + size]) for i in range(0, len(ids), size)]


def _keep_retry_keys(items: list[LinePushItem]) -> None:
    """An item made without `save()` (bulk_create) gets its retry key before its first attempt."""
    keyless = [item for item in items if not item.retry_key]
    for item in keyless:
        item.retry_key = item.derived_retry_key()
    LinePushItem.objects.bulk_update(keyless, ["retry_key"])


# -- sending ------------------------------------------------------------------------------


@dataclass
class Outcome:
    item: LinePushItem
    retry_key: str
    result: SendResult | None = None
    error: TransportError | None = None


def push_send(*, item_ids: list[int], token: str) -> dict[str, int]:
    """Worker: push each still-claimed item once, then record every outcome."""
    items = list(LinePushItem.objects.filter(pk__in=item_ids, claimed_by=token, status=Status.PENDING))
    # One tenant per claim: read (and decrypt) its row once, not once per item.
    tenants = Tenant.objects.in_bulk({item.tenant_id for item in items})
    for item in items:
        item.tenant = tenants[item.tenant_id]
    outcomes = push_items(items)
    return push_record(outcomes=outcomes, token=token)


def push_items(items: list[LinePushItem]) -> list[Outcome]:
    """The HTTP part: no transaction, no lock."""
    return [_push_one(line_transport(item.tenant.line_channel_token), item) for item in items]


def _push_one(transport: LineTransport, item: LinePushItem) -> Outcome:
    key = item.retry_key
    if not item.tenant.line_channel_token:
        error = TransportError("LINE チャネルアクセストークンが設定されていません", permanent=True, auth=True)
        return Outcome(item, key, error=error)
    try:
        return Outcome(
            item, key, result=transport.push(to=item.ext_group_id, messages=item.payload, retry_key=key)
        )
    except TransportError as exc:
        return Outcome(item, key, error=exc)


# -- recording ----------------------------------------------------------------------------


def push_record(*, outcomes: list[Outcome], token: str) -> dict[str, int]:
    now = timezone.now()
    counts: Counter = Counter()
    sent = [o for o in outcomes if _was_sent(o)]
    with transaction.atomic():
        attempts = [_attempt(o, _sent_outcome(o)) for o in sent]
        counts[Status.SENT] = _record_sent(sent, token, now)
        for outcome in outcomes:
            if not _was_sent(outcome):
                status, attempt_outcome = _record_unsent(outcome, token, now)
                counts[status] += 1
                attempts.append(_attempt(outcome, attempt_outcome))
        LinePushAttempt.objects.bulk_create(attempts)
    _auth_failures(outcomes, now)
    _warn_quotas({o.item.tenant for o in outcomes if o.result is not None}, now)
    return dict(counts)


def _was_sent(outcome: Outcome) -> bool:
    """2xx, or 409: LINE had already accepted this retry key.

    https://developers.line.biz/en/docs/messaging-api/retrying-api-request/
    """
    return outcome.result is not None or outcome.error.status == 409


def _sent_outcome(outcome: Outcome) -> str:
    duplicate = outcome.result is None or outcome.result.duplicate
    return LinePushAttempt.Outcome.DUPLICATE if duplicate else LinePushAttempt.Outcome.SENT


def _record_sent(sent: list[Outcome], token: str, now: datetime) -> int:
    """One UPDATE for the whole batch (the common case), only for items still claimed by us."""
    if not sent:
        return 0
    request_ids = [
        When(pk=o.item.pk, then=Value(o.result.request_id if o.result else o.error.request_id)) for o in sent
    ]
    LinePushItem.objects.filter(pk__in=[o.item.pk for o in sent], claimed_by=token).update(
        status=Status.SENT,
        sent_at=now,
        request_id=Case(*request_ids, default=Value("")),
        last_error="",
        attempt_count=F("attempt_count") + 1,
        lease_until=None,
        claimed_by="",
    )
    return len(sent)


def _record_unsent(outcome: Outcome, token: str, now: datetime) -> tuple[str, str]:
    item, error = outcome.item, outcome.error
    attempt = item.attempt_count + 1
    mine = LinePushItem.objects.filter(pk=item.pk, claimed_by=token)
    done = {"attempt_count": attempt, "lease_until": None, "claimed_by": ""}
    if mine.exists():
        _give_back(item, now)
    if _monthly_limit(error):
        mine.update(
            status=Status.HELD, last_error=f"LINE の月間上限に達したため保留しました: {error.message}", **done
        )
        return Status.HELD, LinePushAttempt.Outcome.FAILED
    if error.permanent:
        mine.update(status=Status.FAILED, last_error=error.message, **done)
        return Status.FAILED, LinePushAttempt.Outcome.FAILED
    if attempt >= LinePushItem.MAX_ATTEMPTS:
        reason = f"再試行の上限（{LinePushItem.MAX_ATTEMPTS} 回）に達しました。最後のエラー: {error.message}"
        mine.update(status=Status.FAILED, last_error=reason, **done)
        return Status.FAILED, LinePushAttempt.Outcome.FAILED
    mine.update(scheduled_at=now + backoff(attempt, error.retry_after), last_error=error.message, **done)
    return "retry", LinePushAttempt.Outcome.RETRY


def backoff(attempt: int, retry_after: float | None = None) -> timedelta:
    """Exponential: base, 2 × base, … (LINEPUSH_RETRY_BASE_SECONDS); a longer Retry-After wins."""
    seconds = settings.LINEPUSH_RETRY_BASE_SECONDS * 2 ** (attempt - 1)
    return timedelta(seconds=max(seconds, retry_after or 0))


def _monthly_limit(error: TransportError) -> bool:
    # LINE answers 429 both for its rate limit and for an exhausted month; only the
    # message tells them apart (https://developers.line.biz/en/docs/messaging-api/handling-http-429-errors/;
    # the text is from a third-party copy, UNCONFIRMED verbatim).
    return error.status == 429 and "monthly limit" in error.message


def _give_back(item: LinePushItem, now: datetime) -> None:
    """An attempt that sent nothing returns its messages to the month's allowance."""
    if not item.reserved_cost or item.reserved_at is None:
        return
    push = LinePushSettings.objects.get(tenant_id=item.tenant_id)
    LineMonthlyUsage.objects.filter(
        tenant_id=item.tenant_id, month=month_of(item.reserved_at, push.zone)
    ).update(messages=Greatest(F("messages") - item.reserved_cost, Value(0)))


def _attempt(outcome: Outcome, attempt_outcome: str) -> LinePushAttempt:
    result, error = outcome.result, outcome.error
    return LinePushAttempt(
        item=outcome.item,
        retry_key=outcome.retry_key,
        status_code=result.status if result else error.status,
        request_id=result.request_id if result else error.request_id,
        outcome=attempt_outcome,
        error=error.message if error else "",
        duration_ms=result.duration_ms if result else 0,
    )


def _auth_failures(outcomes: list[Outcome], now: datetime) -> None:
    tenants = {o.item.tenant_id for o in outcomes if o.error is not None and o.error.auth}
    if tenants:
        Tenant.objects.filter(pk__in=tenants, line_token_invalid_at__isnull=True).update(
            line_token_invalid_at=now
        )


def _warn_quotas(tenants: set[Tenant], now: datetime) -> None:
    for tenant in tenants:
        push = LinePushSettings.objects.select_related("plan").get(tenant=tenant)
        usage = LineMonthlyUsage.objects.filter(tenant=tenant, month=month_of(now, push.zone)).first()
        if usage is not None and usage.warned_at is None:
            quota_warn_once(tenant=tenant, usage=usage, limit=quota_limit(push=push, usage=usage))

"""Sending the claimed group posts (linepush/push.py claims them) and recording each outcome.

Workers push each item with its stored `X-Line-Retry-Key` and record the outcome only while
the item is still claimed by their token; no transaction is held across an HTTP call. A key
LINE already accepted answers 409, which is `sent`: a worker that dies after the push leaves
its claim to expire, and the resend with the same key is that 409, so a post goes out once.
"""

from __future__ import annotations

import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from core.due import take_over
from core.keeper import held_claim, in_threads, keeper
from core.models import Tenant
from core.retry import next_retry_at
from core.statements import rows_insert
from core.transport import SendResult, TransportError
from line.models import LineMonthlyUsage, LinePushSettings
from line.services import message_push, token_refused
from line.usage import month_of, quota_limit
from linepush.models import LinePushAttempt, LinePushItem
from linepush.push import PUSH_LEASE
from linepush.services import quota_warn_once

Status = LinePushItem.Status


# -- sending ------------------------------------------------------------------------------

# The columns a task reads of its items: what it sends and what recording an outcome needs.
# Not the rest (the other timestamps, the texts): decoding them is worker CPU every post
# would spend for nothing (docs/benchmarks/history/linepush.md, "reading only the columns
# used"). A column left out is still read, one query per item, when something asks for it.
SENDING_READS = (
    "tenant_id",
    "ext_group_id",
    "payload",
    "retry_key",
    "attempt_count",
    "reserved_cost",
    "reserved_at",
)


@dataclass
class Outcome:
    item: LinePushItem
    retry_key: str
    result: SendResult | None = None
    error: TransportError | None = None


def push_send(*, item_ids: list[int], token: str, near_quota: bool = True) -> dict[str, int]:
    """Worker: push each still-claimed item once, then record every outcome. The items
    become this worker's (core/due.py `take_over`) and its keeper renews them until then.
    `near_quota`: the claim left its tenant's month at 80 % or more, unwarned; only then
    does the worker read the month's count to warn (two reads a task otherwise)."""
    now = timezone.now()
    pending = LinePushItem.objects.filter(status=Status.PENDING)
    token, ids = take_over(pending, pks=item_ids, now=now, lease=PUSH_LEASE, token=token)
    claims = [held_claim(LinePushItem, pk=pk, lease=PUSH_LEASE, now=now, owner=token) for pk in ids]
    with keeper.keeping(*claims):
        items = list(LinePushItem.objects.filter(PUSH_LEASE.mine(token), pk__in=ids).only(*SENDING_READS))
        # One tenant per claim: read (and decrypt) its row once, not once per item.
        tenants = Tenant.objects.in_bulk({item.tenant_id for item in items})
        for item in items:
            item.tenant = tenants[item.tenant_id]
        outcomes = push_items(items)
        return push_record(outcomes=outcomes, token=token, near_quota=near_quota)


def push_items(items: list[LinePushItem]) -> list[Outcome]:
    """The HTTP part: no transaction, no lock. LINEPUSH_SEND_LANES lanes send at once, each
    on its own kept-alive connection, so a worker does not sit idle for every answer; a
    group's items share a lane and go in their order. Outcomes come back in `items`' order."""
    lanes: dict[int, list[LinePushItem]] = defaultdict(list)
    for item in items:
        lanes[lane_of(item.ext_group_id)].append(item)
    sent = in_threads(_push_lane, list(lanes.values()))
    by_item = {outcome.item.pk: outcome for outcomes in sent for outcome in outcomes}
    return [by_item[item.pk] for item in items]


def lane_of(group_id: str) -> int:
    """The lane a group's posts take: always the same one, so they go in their order."""
    return zlib.crc32(group_id.encode()) % max(1, settings.LINEPUSH_SEND_LANES)


def _push_lane(items: list[LinePushItem]) -> list[Outcome]:
    return [_push_one(item) for item in items]


def _push_one(item: LinePushItem) -> Outcome:
    key = item.retry_key
    if not item.tenant.line_channel_token:
        error = TransportError("LINE チャネルアクセストークンが設定されていません", permanent=True, auth=True)
        return Outcome(item, key, error=error)
    try:
        result = message_push(tenant=item.tenant, to=item.ext_group_id, messages=item.payload, retry_key=key)
    except TransportError as exc:
        return Outcome(item, key, error=exc)
    return Outcome(item, key, result=result)


# -- recording ----------------------------------------------------------------------------


def push_record(*, outcomes: list[Outcome], token: str, near_quota: bool = True) -> dict[str, int]:
    now = timezone.now()
    counts: Counter = Counter()
    sent = [o for o in outcomes if _was_sent(o)]
    with transaction.atomic():
        attempts = [_attempt(o, _sent_outcome(o)) for o in sent]
        rows_insert(attempts)  # before the items: they read their request id from it
        counts[Status.SENT] = _record_sent(sent, token, now)
        attempts = []
        for outcome in outcomes:
            if not _was_sent(outcome):
                status, attempt_outcome = _record_unsent(outcome, token, now)
                counts[status] += 1
                attempts.append(_attempt(outcome, attempt_outcome))
        rows_insert(attempts)
    _auth_failures(outcomes, now)
    if near_quota:
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
    """One UPDATE for the whole batch (the common case), only for items still claimed by us.
    Each item's request id is its attempt's, just written, read by a subquery: the statement
    stays the same whatever the batch, where a CASE needs a branch built for every item."""
    if not sent:
        return 0
    attempt = LinePushAttempt.objects.filter(item=OuterRef("pk")).order_by("-pk").values("request_id")[:1]
    LinePushItem.objects.filter(PUSH_LEASE.mine(token), pk__in=[o.item.pk for o in sent]).update(
        status=Status.SENT,
        sent_at=now,
        request_id=Subquery(attempt),
        last_error="",
        attempt_count=F("attempt_count") + 1,
        **PUSH_LEASE.freed(),
    )
    return len(sent)


def _record_unsent(outcome: Outcome, token: str, now: datetime) -> tuple[str, str]:
    item, error = outcome.item, outcome.error
    attempt = item.attempt_count + 1
    mine = LinePushItem.objects.filter(PUSH_LEASE.mine(token), pk=item.pk)
    done = {"attempt_count": attempt, **PUSH_LEASE.freed()}
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
    again = next_retry_at("line_push", attempt, error.retry_after, now=now)
    mine.update(scheduled_at=again, last_error=error.message, **done)
    return "retry", LinePushAttempt.Outcome.RETRY


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
        for tenant_id in tenants:
            token_refused(tenant_id=tenant_id)


def _warn_quotas(tenants: set[Tenant], now: datetime) -> None:
    for tenant in tenants:
        push = LinePushSettings.objects.select_related("plan").get(tenant=tenant)
        usage = LineMonthlyUsage.objects.filter(tenant=tenant, month=month_of(now, push.zone)).first()
        if usage is not None and usage.warned_at is None:
            quota_warn_once(tenant=tenant, usage=usage, limit=quota_limit(push=push, usage=usage))

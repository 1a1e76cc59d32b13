"""Workflows of the group push queue: enqueue, approve / reject, settings, quota (seed 003).

Sending (claim → push → record) is in `linepush.push` and `linepush.sending`; producers of items in
`linepush.producers`; the LINE webhook in `line.events`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import mail_admins
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.models import Tenant
from core.transport import TransportError
from line.messages import validate_line_messages
from line.models import LineMonthlyUsage, LineSource, Trigger
from line.services import push_settings
from line.usage import quota_limit, usage_check
from linepush.models import (
    API_ORIGIN,
    LineApiToken,
    LinePushItem,
    LinePushProblem,
    LineTriggerPolicy,
    token_space,
)

logger = logging.getLogger(__name__)

QUOTA_WARNING_RATIO = 0.8


class PushInvalid(ValueError):
    """An item automedia cannot accept; `problems` are Japanese, one per problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class PushKeyTaken(ValueError):
    """An API token's dedupe key is already used by another origin of the tenant."""

    def __init__(self):
        super().__init__(
            "この dedupe_key は別の発生元（automedia 自身の投稿か別のトークン）が使用しています。"
        )


# -- enqueue ----------------------------------------------------------------------------


def push_validate(*, trigger_type: str, ext_group_id: str, payload: object, dedupe_key: str) -> None:
    problems = []
    if trigger_type not in Trigger.values:
        problems.append(f"trigger_type「{trigger_type}」は使えません（{', '.join(Trigger.values)}）。")
    if not ext_group_id:
        problems.append("ext_group_id（投稿先グループID）がありません。")
    if not dedupe_key:
        problems.append("dedupe_key（重複排除キー）がありません。")
    problems += validate_line_messages(payload)
    if problems:
        raise PushInvalid(problems)


def push_enqueue(
    *,
    tenant: Tenant,
    ext_group_id: str,
    trigger_type: str,
    payload: list[dict],
    dedupe_key: str,
    source_table: str = "",
    source_id: str = "",
    scheduled_at: datetime | None = None,
    approval_required: bool = False,
    origin: str = "",
    api_token: LineApiToken | None = None,
) -> tuple[LinePushItem, bool]:
    """Queue one post; an existing dedupe_key of its space is a no-op returning that item (created=False).

    Raises PushKeyTaken for a token's key another origin of the tenant uses.

    Dedupe keys are the tenant's own, in a space per origin: automedia's producers share one
    (`origin` names the producer), each API token has its own, and another tenant's or
    another space's item with the same key is neither found nor in the way.

    The group's opt-in is checked now (an opted-out group ends `skipped` with the reason,
    so the refusal is visible) and again when the item is sent. `approval_required`: the
    post waits for a manager whatever the tenant's trigger policy says (the API's tokens).
    """
    push_validate(
        trigger_type=trigger_type, ext_group_id=ext_group_id, payload=payload, dedupe_key=dedupe_key
    )
    space = token_space(api_token) if api_token else ""
    mine = LinePushItem.objects.filter(tenant=tenant, dedupe_space=space, dedupe_key=dedupe_key)
    existing = mine.first()
    if existing is not None:
        return existing, False
    if api_token and _key_taken_elsewhere(tenant=tenant, space=space, dedupe_key=dedupe_key):
        raise PushKeyTaken()
    item = LinePushItem(
        tenant=tenant,
        ext_group_id=ext_group_id,
        trigger_type=trigger_type,
        payload=payload,
        dedupe_key=dedupe_key,
        dedupe_space=space,
        origin=API_ORIGIN if api_token else origin,
        api_token=api_token,
        source_table=source_table,
        source_id=source_id,
        scheduled_at=scheduled_at or timezone.now(),
    )
    _initial_status(item, approval_required)
    try:
        with transaction.atomic():
            item.save(force_insert=True)
    except IntegrityError:  # a concurrent enqueue of the same key won
        return mine.get(), False
    return item, True


def _key_taken_elsewhere(*, tenant: Tenant, space: str, dedupe_key: str) -> bool:
    """Another origin of the tenant (a producer, another token) has a post under this key.

    Only a token is refused for it: a producer queues its post in its own space even
    when a token used the key first, so no token can stand in for automedia's post.
    """
    others = LinePushItem.objects.filter(tenant=tenant, dedupe_key=dedupe_key)
    return others.exclude(dedupe_space=space).exists()


def _initial_status(item: LinePushItem, approval_required: bool) -> None:
    source = LineSource.objects.filter(tenant=item.tenant, group_id=item.ext_group_id).first()
    refusal = item.may_send(source)
    if refusal:
        item.status, item.last_error = LinePushItem.Status.SKIPPED, refusal
    elif approval_required or LineTriggerPolicy.approval_required(item.tenant, item.trigger_type):
        item.status = LinePushItem.Status.WAITING_APPROVAL


# -- problems of producers ----------------------------------------------------------------


@dataclass(frozen=True)
class PushSource:
    """What a producer makes a post from: a content task, a LINE group."""

    tenant: Tenant
    trigger_type: str
    source_table: str
    source_id: str

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.trigger_type} {self.source_table}:{self.source_id}"

    def key(self) -> dict:
        return {
            "tenant": self.tenant,
            "trigger_type": self.trigger_type,
            "source_table": self.source_table,
            "source_id": self.source_id,
        }


def push_problem_record(*, source: PushSource, error: str) -> None:
    """Keep why a post of `source` could not be queued, for its tenant's managers to see."""
    now = timezone.now()
    rows = LinePushProblem.objects.filter(**source.key())
    if rows.update(error=error, last_seen_at=now, occurrences=F("occurrences") + 1):
        return
    try:
        with transaction.atomic():
            LinePushProblem.objects.create(**source.key(), error=error, last_seen_at=now)
    except IntegrityError:  # a concurrent run recorded it first
        rows.update(error=error, last_seen_at=now, occurrences=F("occurrences") + 1)


def push_problem_clear(*, source: PushSource) -> None:
    """The source's post was queued after all: its problem is solved."""
    LinePushProblem.objects.filter(**source.key()).delete()


# -- approval ---------------------------------------------------------------------------


def push_approve(*, item: LinePushItem, user: AbstractBaseUser) -> bool:
    """A manager lets a waiting item go; False when it was not waiting."""
    return (
        LinePushItem.objects.filter(pk=item.pk, status=LinePushItem.Status.WAITING_APPROVAL).update(
            status=LinePushItem.Status.PENDING, approved_by=user, approved_at=timezone.now()
        )
        == 1
    )


def push_reject(*, item: LinePushItem, user: AbstractBaseUser) -> bool:
    """A manager refuses a waiting item: it ends `skipped` and is never sent."""
    reason = f"{user.get_username()} が却下しました"
    return (
        LinePushItem.objects.filter(pk=item.pk, status=LinePushItem.Status.WAITING_APPROVAL).update(
            status=LinePushItem.Status.SKIPPED, rejected_by=user, last_error=reason
        )
        == 1
    )


def push_retry(*, item: LinePushItem) -> bool:
    """A person sends a failed item again: back to the queue as a fresh try; False unless failed.

    The item's stored retry key is unchanged, so LINE still answers 409 for a
    post it accepted in the last 24 h; the 23-hour guard restarts from this try.
    """
    return (
        LinePushItem.objects.filter(pk=item.pk, status=LinePushItem.Status.FAILED).update(
            status=LinePushItem.Status.PENDING,
            scheduled_at=timezone.now(),
            attempt_count=0,
            last_error="",
            first_attempt_at=None,
            **LinePushItem.LEASE.freed(),
        )
        == 1
    )


def push_dismiss(*, item: LinePushItem, user: AbstractBaseUser) -> bool:
    """A manager gives up a failed item: it ends `skipped` and is never sent; False unless failed."""
    reason = f"{user.get_username()} が取り消しました（{item.last_error}）"[:500]
    return (
        LinePushItem.objects.filter(pk=item.pk, status=LinePushItem.Status.FAILED).update(
            status=LinePushItem.Status.SKIPPED, rejected_by=user, last_error=reason
        )
        == 1
    )


def held_release(*, tenant: Tenant) -> int:
    """Held items go back to the queue; the claim checks the quota again."""
    return LinePushItem.objects.filter(tenant=tenant, status=LinePushItem.Status.HELD).update(
        status=LinePushItem.Status.PENDING
    )


def push_resume(*, item: LinePushItem) -> bool:
    """A manager sends one held item on (the claim checks the quota again); False unless held."""
    return (
        LinePushItem.objects.filter(pk=item.pk, status=LinePushItem.Status.HELD).update(
            status=LinePushItem.Status.PENDING
        )
        == 1
    )


# -- quota --------------------------------------------------------------------------------


@dataclass
class QuotaReport:
    month: str
    used: int
    limit: int | None
    released: int = 0


def quota_near(*, usage: LineMonthlyUsage, messages: int, limit: int | None) -> bool:
    """`messages` of the month's allowance reach 80 % and nobody was warned yet this month."""
    return bool(limit) and usage.warned_at is None and messages >= QUOTA_WARNING_RATIO * limit


def quota_warn_once(*, tenant: Tenant, usage: LineMonthlyUsage, limit: int | None) -> bool:
    """At 80 % of the month's allowance: log and mail ADMINS, once per tenant and month."""
    if not quota_near(usage=usage, messages=usage.messages, limit=limit):
        return False
    first = LineMonthlyUsage.objects.filter(pk=usage.pk, warned_at__isnull=True).update(
        warned_at=timezone.now()
    )
    if not first:
        return False
    percent = int(100 * usage.messages / limit)
    text = (
        f"テナント {tenant.slug} の LINE メッセージ使用数が今月（{usage.month}）の上限の {percent}% に達しました"
        f"（{usage.messages:,} / {limit:,} 通）。上限を超えるとグループ投稿は保留されます。"
    )
    logger.warning("line quota warning: %s", text)
    mail_admins(f"[automedia] LINE メッセージ数が上限の 80% を超えました（{tenant.name}）", text)
    return True


def quota_check(*, tenant: Tenant) -> QuotaReport:
    """Daily: read LINE's quota and usage, store them, warn at 80 %, release held items if room."""
    push = push_settings(tenant=tenant)
    usage = usage_check(tenant=tenant, push=push)
    limit = quota_limit(push=push, usage=usage)
    quota_warn_once(tenant=tenant, usage=usage, limit=limit)
    released = held_release(tenant=tenant) if limit is None or usage.messages < limit else 0
    return QuotaReport(month=usage.month, used=usage.messages, limit=limit, released=released)


def quota_check_all() -> dict[str, str]:
    results = {}
    for tenant in Tenant.objects.filter(is_active=True).exclude(line_channel_token=""):
        try:
            report = quota_check(tenant=tenant)
            results[tenant.slug] = f"{report.used}/{report.limit or '∞'} released={report.released}"
        except TransportError as exc:
            logger.warning("LINE quota check of %s failed: %s", tenant.slug, exc.message)
            results[tenant.slug] = f"error: {exc.message}"
    return results


def posts_pending(*, tenant: Tenant, start: datetime, end: datetime) -> int:
    """Messages of the group posts due in [start, end) and not sent yet, for the LINE quota
    forecast (line/forecast.py): a post costs its group's members, 1 if unknown."""
    items = LinePushItem.objects.filter(
        tenant=tenant, status__in=LinePushItem.OPEN, scheduled_at__gte=start, scheduled_at__lt=end
    ).values_list("ext_group_id", flat=True)
    groups = list(items)
    costs = {g.group_id: g.cost for g in LineSource.objects.filter(tenant=tenant, group_id__in=set(groups))}
    return sum(costs.get(group, 1) for group in groups)

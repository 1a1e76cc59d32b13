"""What every channel's publisher shares (deliveries/channels/<kind>/publisher.py).

A publisher takes one claimed run of a schedule (`Context`) and moves its `ChannelPost`
on as far as it can: it returns `Done` (published; the write-back follows) or `Wait`
(re-check later on the same schedule row: processing, quota, pacing), or raises
`PublishFailed` (ends in automediaエラー), `PlatformError` (the retry policy decides),
or `ClaimLost`. Every platform call is recorded as a DeliveryAttempt row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, transaction

from core.channels import channel_label
from core.models import Tenant
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.platform_transport import PlatformError, PlatformTransport
from deliveries.models import ContentTask, DeliveryAttempt

SEND_KEY_NAMESPACE = uuid.UUID("2b8e6d0c-7f3a-4c59-9e1d-5a4f3c2b1e07")


class PublishFailed(Exception):
    """A permanent failure of this publication: automediaエラー with this reason."""

    def __init__(self, reason: str, *, auth: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.auth = auth


class ClaimLost(Exception):
    """The schedule's lease passed to another worker: stop before the next call."""


@dataclass
class Done:
    """Published. `summary` is kept in the schedule's outcome and names ids and links.
    `records`: attempt rows of accepted sends not saved yet; the run saves them in the
    transaction that records its outcome (one commit for both)."""

    summary: dict
    records: list = field(default_factory=list)


@dataclass
class Wait:
    """Not finished: look again at `due_at` (not counted as a retry)."""

    due_at: datetime
    reason: str
    comment: str = ""  # posted once on the Backlog issue (e.g. until when quota is awaited)


class Waiting(Exception):
    """Raised from deep inside a loop to return a Wait."""

    def __init__(self, wait: Wait):
        super().__init__(wait.reason)
        self.wait = wait


@dataclass
class Context:
    tenant: Tenant
    task: ContentTask
    content: dict | list  # the post (a dict), or LINE's messages (a list)
    audience: str
    now: datetime
    still_mine: Callable[[], bool] = field(default=lambda: True)
    due_at: datetime | None = None  # when the run was due (LINE records how late each chunk went)
    nothing_sent: bool = False  # known (by the caller, under its claim): no chunk of this approval went out

    def check_claim(self) -> None:
        if not self.still_mine():
            raise ClaimLost()


def account_for(tenant: Tenant, channel: str) -> ChannelAccount:
    account = ChannelAccount.objects.select_related("tenant").filter(tenant=tenant, channel=channel).first()
    if account is None or not account.access_token:
        label = channel_label(channel)
        raise PublishFailed(
            f"{label} のアカウントが設定されていません（manage.py add_channel {tenant.slug} {channel} … で登録してください）。"
        )
    return account


def post_for(ctx: Context, account: ChannelAccount) -> ChannelPost:
    """This approval's publication (created once; a retry finds the same row)."""
    key = {"task": ctx.task, "approval_seq": ctx.task.approval_seq}
    post = ChannelPost.objects.filter(**key).first()
    if post is not None:
        return post
    send_key = uuid.uuid5(
        SEND_KEY_NAMESPACE, f"{ctx.tenant.slug}:{ctx.task.issue_key}:{ctx.task.approval_seq}"
    )
    try:
        with transaction.atomic():
            return ChannelPost.objects.create(
                tenant=ctx.tenant,
                channel=account.channel,
                send_key=f"am{send_key.hex}",
                details={"content": ctx.content},  # what a resumed publication goes on with
                **key,
            )
    except IntegrityError:
        return ChannelPost.objects.get(**key)


def save(post: ChannelPost, **changes) -> None:
    """Persist a step at once (the next call must find it after any crash)."""
    for name, value in changes.items():
        setattr(post, name, value)
    ChannelPost.objects.filter(pk=post.pk).update(**changes)


def record(
    ctx: Context,
    transport: PlatformTransport,
    endpoint: str,
    *,
    key: str = "",
    summary: dict | None = None,
    error: PlatformError | None = None,
    outcome: str | None = None,
) -> DeliveryAttempt:
    """The audit row of one platform call."""
    if outcome is None:
        if error is None:
            outcome = DeliveryAttempt.Outcome.SENT
        else:
            outcome = DeliveryAttempt.Outcome.FAILED if error.permanent else DeliveryAttempt.Outcome.RETRY
    return DeliveryAttempt.objects.create(
        tenant=ctx.tenant,
        task=ctx.task,
        approval_seq=ctx.task.approval_seq,
        channel=transport.service,
        endpoint=endpoint[:200],
        retry_key=key[:64],
        request_summary=summary or {},
        status_code=error.status if error is not None else transport.last_status,
        request_id=((error.request_id if error is not None else "") or transport.last_request_id)[:100],
        outcome=outcome,
        error=error.message if error is not None else "",
        duration_ms=transport.last_duration_ms,
    )


def recorded(ctx: Context, transport: PlatformTransport, endpoint: str, call: Callable, **record_kwargs):
    """Run one call and record it either way (errors are re-raised)."""
    try:
        result = call()
    except PlatformError as exc:
        record(ctx, transport, endpoint, error=exc, **record_kwargs)
        raise
    record(ctx, transport, endpoint, **record_kwargs)
    return result

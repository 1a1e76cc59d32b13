"""Approval-time checks: what would fail at publish time is said at approval.

Every way a task is approved (webhook, admin, scan rescue, `/automedia send`) and the preview
run them before anything is scheduled; each channel says what it checks
(deliveries/channels/<kind>/approval.py). What may still change before the due time without
an edit of the issue (a template not imported yet, a missing account) is said in the comment
but refuses nothing.
"""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.channels import CHANNELS
from core.models import Tenant
from deliveries.channels.approval_base import ApprovalChecks
from deliveries.channels.publishing import sending_channel
from deliveries.channels.registry import channel_part
from deliveries.models import ContentTask


def approval_check(
    *,
    tenant: Tenant,
    parsed: ParsedTask,
    due_at: datetime,
    now: datetime,
    override: dict | None = None,
    task: ContentTask | None = None,
) -> ApprovalChecks:
    """Everything about this send that can be known now; asks the channel (LINE's validate
    and quota, Instagram's content_publishing_limit, TikTok's creator_info), never publishes."""
    override = override or {}
    channel = sending_channel(parsed, override)
    checks = ApprovalChecks()
    if channel in CHANNELS:
        channel_part(channel, "approval").check(
            checks, tenant=tenant, parsed=parsed, override=override, due_at=due_at, now=now, task=task
        )
    return checks


def approval_check_counts_others(*, tenant: Tenant, parsed: ParsedTask) -> bool:
    """Whether the check's verdict may depend on what other approvals scheduled (a quota
    forecast, a publishing limit). Such an approval is checked only once the ones before it
    are registered."""
    channel = parsed.channel
    return channel in CHANNELS and channel_part(channel, "approval").counts_others(tenant=tenant)


def approval_checks_store(*, task: ContentTask, checks: ApprovalChecks, now: datetime) -> None:
    """Kept on the task: the admin's detail page shows it, later forecasts count its messages."""
    ContentTask.objects.filter(pk=task.pk).update(approval_checks=checks.to_json(checked_at=now))

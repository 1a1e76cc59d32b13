"""HubSpot at approval time: the template rules of its note or email."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from deliveries.channels.approval_base import ApprovalChecks, post_rules
from deliveries.channels.models import ChannelAccount
from deliveries.models import ContentTask


def check(
    checks: ApprovalChecks,
    *,
    tenant: Tenant,
    parsed: ParsedTask,
    override: dict,
    due_at: datetime,
    now: datetime,
    task: ContentTask | None,
) -> None:
    post_rules(
        checks, tenant=tenant, channel=ChannelAccount.Channel.HUBSPOT, parsed=parsed, override=override
    )


def counts_others(*, tenant: Tenant) -> bool:
    return False

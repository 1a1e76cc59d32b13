"""The fake channel at approval time: one line that says it was asked."""

from __future__ import annotations

from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from deliveries.channels.approval_base import ApprovalChecks
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
    checks.lines.append(f"Fake 確認: {override.get('audience') or parsed.audience}")


def counts_others(*, tenant: Tenant) -> bool:
    return False

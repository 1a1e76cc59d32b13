"""A tenant's connections, checked and set up: what `add_tenant`, `add_channel`,
`check_connections`, `setup_tenant` and the admin's 接続状況 page call. Each platform's check
lives with its client (backlog_bridge/connection.py, the LINE package's `connection`, each
account channel's `account.check`); this module only runs them and keeps their results."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from backlog_bridge.connection import ProjectNeeds, Refused, backlog_check, backlog_setup
from backlog_bridge.models import HANDLED_TYPES
from core.connections import CheckResult, connection_record
from core.models import Tenant
from deliveries.channels.models import ChannelAccount
from deliveries.channels.registry import channel_part
from deliveries.models import (
    FIELD_DELIVERED_AT,
    FIELD_PUBLISH_AT,
    STATUS_APPROVED,
    STATUS_DELIVERED,
    STATUS_ERROR,
)
from deliveries.services import tenant_webhook_urls


def setup_command(tenant: Tenant) -> str:
    return f"manage.py setup_tenant {tenant.slug}"


def project_needs(tenant: Tenant, base_url: str) -> ProjectNeeds:
    """What automedia reads and writes in the tenant's project (seed 001)."""
    return ProjectNeeds(
        statuses=(STATUS_APPROVED, STATUS_DELIVERED, STATUS_ERROR),
        fields=(FIELD_PUBLISH_AT, FIELD_DELIVERED_AT),
        webhook_url=tenant_webhook_urls(tenant=tenant, base_url=base_url)["backlog_webhook_url"],
        activity_types=tuple(sorted(HANDLED_TYPES)),
        command=setup_command(tenant),
    )


def tenant_checks(*, tenant: Tenant, base_url: str | None = None) -> list[CheckResult]:
    """Backlog, and LINE when the tenant has a channel token; nothing is saved (the tenant
    may be a new one, not saved yet)."""
    base_url = base_url or settings.PUBLIC_BASE_URL
    results = [backlog_check(tenant=tenant, needs=project_needs(tenant, base_url))]
    if tenant.line_channel_token:
        line_url = tenant_webhook_urls(tenant=tenant, base_url=base_url)["line_webhook_url"]
        line = channel_part("line", "connection")
        results.append(line.check(tenant=tenant, webhook_url=line_url, command=setup_command(tenant)))
    return results


def account_check(account: ChannelAccount) -> CheckResult:
    return channel_part(account.channel, "account").check(account)


def connections_check(*, tenant: Tenant, base_url: str | None = None) -> list[CheckResult]:
    """Every connection of a saved tenant, each result kept (the 接続状況 page, 要対応)."""
    results = tenant_checks(tenant=tenant, base_url=base_url)
    accounts = ChannelAccount.objects.filter(tenant=tenant).select_related("tenant").order_by("channel")
    results += [account_check(account) for account in accounts]
    connections_record(tenant=tenant, results=results)
    return results


def connections_record(*, tenant: Tenant, results: list[CheckResult]) -> None:
    for result in results:
        connection_record(tenant=tenant, result=result)


@dataclass
class SetupReport:
    lines: list[str] = field(default_factory=list)
    failed: bool = False  # a platform refused its credentials: nothing was set up there


def tenant_setup(*, tenant: Tenant, base_url: str | None = None, dry_run: bool = False) -> SetupReport:
    """Make the tenant's Backlog project and LINE channel ready and say what was done (or
    would be, `dry_run`), line by line. A second run changes nothing. The checks run again
    afterwards (not on a dry run), so the 接続状況 page shows the result."""
    base_url = base_url or settings.PUBLIC_BASE_URL
    report = SetupReport()
    try:
        report.lines += backlog_setup(tenant=tenant, needs=project_needs(tenant, base_url), dry_run=dry_run)
    except Refused as exc:
        report.lines.append(f"Backlog: 設定できません: {exc}")
        report.failed = True
    if tenant.line_channel_token:
        _line_setup(report, tenant, base_url, dry_run)
    else:
        report.lines.append("LINE: チャネルアクセストークンが未設定のため、何もしていません。")
    if not dry_run:
        connections_check(tenant=tenant, base_url=base_url)
    return report


def _line_setup(report: SetupReport, tenant: Tenant, base_url: str, dry_run: bool) -> None:
    line = channel_part("line", "connection")
    url = tenant_webhook_urls(tenant=tenant, base_url=base_url)["line_webhook_url"]
    try:
        report.lines += line.setup(tenant=tenant, webhook_url=url, dry_run=dry_run)
    except line.Refused as exc:
        report.lines.append(f"LINE: 設定できません: {exc}")
        report.failed = True

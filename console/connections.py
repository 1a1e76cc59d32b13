"""The 接続状況 page of a tenant: each platform it uses, OK or what failed (with the fix), and
when it was last checked. The checks themselves run in deliveries/setup/connections.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.models import Connection, Tenant
from deliveries.channels.models import ChannelAccount


@dataclass(frozen=True)
class ConnectionRow:
    platform: str
    label: str
    state: str  # "ok", "failed" or "unchecked"
    problem: str
    notes: list[str]
    checked_at: datetime | None
    failed_at: datetime | None


def connection_rows(tenant: Tenant) -> list[ConnectionRow]:
    """Backlog, LINE when the tenant has a token, each channel account, and any platform a
    check or a refusal recorded."""
    kept = {row.platform: row for row in Connection.objects.filter(tenant=tenant)}
    platforms = ["backlog", *(["line"] if tenant.line_channel_token else [])]
    platforms += (
        ChannelAccount.objects.filter(tenant=tenant).order_by("channel").values_list("channel", flat=True)
    )
    platforms += [p for p in kept if p not in platforms]
    return [_row(platform, kept.get(platform)) for platform in platforms]


def _row(platform: str, kept: Connection | None) -> ConnectionRow:
    label = Connection.Platform(platform).label
    if kept is None:
        return ConnectionRow(platform, label, "unchecked", "", [], None, None)
    state = "ok" if kept.ok else "failed"
    return ConnectionRow(
        platform, label, state, kept.problem, list(kept.notes), kept.checked_at, kept.failed_at
    )

"""Connection checks' common shape and their record: each platform's check (next to its
client) answers a `CheckResult`; `connection_record` keeps it on the tenant's `Connection` row,
and `connection_denied` marks the row failed when the platform refuses a call at run time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from core.models import Connection, Tenant


@dataclass(frozen=True)
class CheckResult:
    """`ok`: the credentials and ids work. `problem`: what does not, and its fix (Japanese).
    `lacks`: what works but is still to be set up, each with the command that does it.
    `facts`: what the platform answered (the key's user, the bot's name)."""

    platform: str
    ok: bool
    problem: str = ""
    lacks: tuple[str, ...] = ()
    facts: tuple[str, ...] = field(default=())

    def lines(self) -> list[str]:
        head = f"{self.platform}: {'OK' if self.ok else 'NG'}"
        return [
            head,
            *(f"  {p}" for p in self.problem.splitlines() if p),
            *(f"  未設定: {x}" for x in self.lacks),
        ]


def connection_record(*, tenant: Tenant, result: CheckResult, now: datetime | None = None) -> Connection:
    """Keep a check's result; a passing check clears a failure (and its 要対応 row)."""
    now = now or timezone.now()
    row, _ = Connection.objects.get_or_create(tenant=tenant, platform=result.platform)
    row.ok, row.problem, row.checked_at = result.ok, result.problem, now
    row.notes = [*(f"未設定: {x}" for x in result.lacks), *result.facts]
    row.failed_at = None if result.ok else (row.failed_at or now)
    row.save()
    return row


def connection_denied(*, tenant_id: int, platform: str, problem: str) -> None:
    """A platform refused a call at run time (401/403): the row fails until a check passes.
    One UPDATE when the row already says so, so a burst of refusals writes once."""
    now = timezone.now()
    changed = Connection.objects.filter(tenant_id=tenant_id, platform=platform, ok=True).update(
        ok=False, problem=problem, failed_at=now
    )
    if not changed and not Connection.objects.filter(tenant_id=tenant_id, platform=platform).exists():
        Connection.objects.get_or_create(
            tenant_id=tenant_id, platform=platform, defaults={"problem": problem, "failed_at": now}
        )

"""`manage.py scan_backlog [--tenant SLUG] [--dry-run] [--json]`: the safety net by hand or from cron.

Exit codes for cron and monitoring: 0 no leaks, 3 leaks found (rescued unless
--dry-run), 1 errors (a tenant's Backlog could not be scanned completely).
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError, OutputWrapper

from core.models import Tenant
from deliveries.safety_net.scan import ScanResult, scan_run, scan_totals

EXIT_LEAKS = 3
DEFAULT_WORKERS = 1  # by hand: `--workers 2` on 2 CPUs; the daily job (a django-q worker) is serial
SHOWN_KEYS = 20  # per tenant and kind in the table's details; --json lists them all
COLUMNS = (
    "tenant",
    "approved",
    "scheduled",
    "delivered",
    "leaks",
    "rescued",
    "stale removed",
    "stuck",
    "errors",
)


class ProgressBar:
    """`\\r[#####.....] 3/10 acme 1200` on stderr: tenants done, then the current tenant's issues."""

    WIDTH = 20

    def __init__(self, out: OutputWrapper, total: int):
        self._out, self._total = out, max(total, 1)
        self._tenants: list[str] = []

    def __call__(self, slug: str, seen: int) -> None:
        if not self._tenants or self._tenants[-1] != slug:
            self._tenants.append(slug)
        done = len(self._tenants) - 1
        filled = self.WIDTH * done // self._total
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self._out.write(f"\r[{bar}] {done}/{self._total} {slug} {seen}\033[K", _plain, ending="")
        self._out.flush()

    def finish(self) -> None:
        if self._tenants:
            self._out.write(f"\r[{'#' * self.WIDTH}] {self._total}/{self._total}\033[K", _plain)


def _plain(text: str) -> str:
    return text  # progress is not an error: no ERROR colour from the command's stderr


class Command(BaseCommand):
    help = "Backlog の承認済み課題と配信予約を照合し、取りこぼし（予約なし・未配信）を予約し直します。"

    def add_arguments(self, parser):
        parser.add_argument(
            "--tenant", metavar="SLUG", help="scan this tenant only (default: every active one)"
        )
        parser.add_argument("--dry-run", action="store_true", help="report only; change nothing")
        parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
        parser.add_argument(
            "--workers",
            type=int,
            default=DEFAULT_WORKERS,
            help=f"tenants scanned at once, one process each (default {DEFAULT_WORKERS})",
        )

    def handle(self, *args, **opts):
        tenants = _tenants(opts["tenant"])
        bar = ProgressBar(self.stderr, len(tenants)) if self.stderr.isatty() else None
        if opts["workers"] < 1:
            raise CommandError("--workers must be 1 or more", returncode=1)
        results = scan_run(  # recorded for the dashboard
            tenants=tenants, dry_run=opts["dry_run"], progress=bar, workers=opts["workers"]
        )
        if bar is not None:
            bar.finish()
        if opts["json"]:
            self.stdout.write(json.dumps(_json(results, opts["dry_run"]), ensure_ascii=False, indent=2))
        else:
            self._table(results, opts["dry_run"])
        self._exit(results)

    def _table(self, results: list[ScanResult], dry_run: bool) -> None:
        if dry_run:
            self.stdout.write(
                "dry run: nothing was changed (leaks and stale schedules are what a run would fix)"
            )
        rows = [_row(r.tenant, _counts(r)) for r in results]
        rows.append(_row("total", scan_totals(results)))
        widths = [max(len(COLUMNS[i]), *(len(row[i]) for row in rows)) for i in range(len(COLUMNS))]
        for row in [list(COLUMNS), *rows]:
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            self.stdout.write("  ".join(cells))
        for r in results:
            self._details(r)

    def _details(self, r: ScanResult) -> None:
        for label, keys in (
            ("leaks", r.leaks),
            ("not rescued", [f"{k} ({why})" for k, why in r.unrescued.items()]),
            ("stale removed", r.stale_removed),
            ("stuck", r.stuck),
            ("errors", r.errors),
        ):
            if keys:
                more = f" … +{len(keys) - SHOWN_KEYS}" if len(keys) > SHOWN_KEYS else ""
                self.stdout.write(f"{r.tenant} {label}: {', '.join(keys[:SHOWN_KEYS])}{more}")

    def _exit(self, results: list[ScanResult]) -> None:
        totals = scan_totals(results)
        if totals["errors"]:
            failed = ", ".join(r.tenant for r in results if r.errors)
            raise CommandError(f"scan incomplete; errors for: {failed}", returncode=1)
        if totals["leaks"]:
            sys.exit(EXIT_LEAKS)


def _tenants(slug: str | None) -> list[Tenant]:
    if slug is None:
        return list(Tenant.objects.filter(is_active=True))
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"no tenant {slug!r}", returncode=1)
    return [tenant]


def _counts(r: ScanResult) -> dict[str, int]:
    return scan_totals([r])


def _row(name: str, counts: dict[str, int]) -> list[str]:
    keys = ("approved", "scheduled", "delivered", "leaks", "rescued", "stale_removed", "stuck", "errors")
    return [name, *(str(counts[k]) for k in keys)]


def _json(results: list[ScanResult], dry_run: bool) -> dict:
    return {
        "dry_run": dry_run,
        "totals": scan_totals(results),
        "tenants": [r.to_json() for r in results],
    }

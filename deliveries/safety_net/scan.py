"""The safety net: compare Backlog's approved issues with local schedules.

Per tenant, the approved issues are read page by page and checked against local state with
one query per page. An approved issue with no schedule and no 自動配信実行日時 is a leak,
registered as a webhook would (`issue_reconcile`; a page's leaks together: deliveries/safety_net/rescue.py);
an unlisted issue's schedule is re-checked on its own; one due long ago and still leased is
reported as stuck. Memory stays bounded by one page plus the tenant's approved issue keys.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import islice

from django.core.mail import mail_admins
from django.db import connections
from django.db.models import Q
from django.utils import timezone

from backlog_bridge.client import MAX_PAGE, BacklogClient
from backlog_bridge.statuses import status_id_require
from core.models import Tenant
from deliveries.approve.lifecycle import issue_reconcile
from deliveries.issues import issue_read
from deliveries.models import FIELD_DELIVERED_AT, STATUS_APPROVED, ContentTask, DeliverySchedule
from deliveries.safety_net.rescue import RECOVERABLE, Outcome, leaks_rescue
from deliveries.signals import scan_finished
from line.forecast import line_usage_shared

logger = logging.getLogger(__name__)

STUCK_AFTER = timedelta(minutes=10)
# An issue the scan itself moves out of the approved list (a rejected leak) shifts
# Backlog's offset paging by one, so a later issue can be skipped: list again.
MAX_PASSES = 3
REPORT_KEYS = 50  # keys named per tenant in an alert; the JSON output has them all
STAYS_APPROVED = ("scheduled at", "rescheduled at", "no change", "error")  # outcomes, see _record

Progress = Callable[[str, int], None]  # (tenant slug, approved issues seen so far)


@dataclass
class ScanResult:
    tenant: str
    approved: int = 0
    scheduled: int = 0  # approved issues that already had a schedule
    delivered: int = 0  # approved issues that already carry 自動配信実行日時
    leaks: list[str] = field(default_factory=list)
    rescued: int = 0
    unrescued: dict[str, str] = field(default_factory=dict)  # leak → what reconcile did instead
    stale_removed: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rate_limit_wait_s: float = 0.0  # slept for Backlog's rate-limit resets (a paced client)

    def to_json(self) -> dict:
        return asdict(self)


# -- one tenant ------------------------------------------------------------------------


def scan_tenant(
    *, tenant: Tenant, client: BacklogClient, dry_run: bool, progress: Progress | None = None
) -> ScanResult:
    result = ScanResult(tenant=tenant.slug)
    started = timezone.now()
    result.stuck = stuck_keys(tenant=tenant, now=started)
    progress = progress or (lambda slug, seen: None)
    progress(tenant.slug, 0)
    try:
        seen = _scan_approved(tenant, client, dry_run, result, progress)
        _reverse_reconcile(tenant, client, dry_run, result, seen, started)
    except RECOVERABLE as exc:
        result.errors.append(str(exc))
        logger.warning("scan of %s stopped: %s", tenant.slug, exc)
    return result


def _scan_approved(
    tenant: Tenant, client: BacklogClient, dry_run: bool, result: ScanResult, progress: Progress
) -> set[str]:
    project_key = tenant.backlog_project_key
    status_id = status_id_require(client=client, project_key=project_key, name=STATUS_APPROVED)
    project_id = client.project(project_key)["id"]
    seen: set[str] = set()
    for _ in range(MAX_PASSES):
        left = 0
        issues = client.iter_issues(project_id=project_id, status_ids=[status_id], count=MAX_PAGE)
        for page in _pages(issues):
            left += _scan_page(tenant, client, page, dry_run, result, seen)
            progress(tenant.slug, len(seen))
        if not left:
            break
    return seen


def _pages(issues: Iterator[dict]) -> Iterator[list[dict]]:
    # Taking exactly one page before acting means the next GET runs after this page's writes.
    while page := list(islice(issues, MAX_PAGE)):
        yield page


def _scan_page(
    tenant: Tenant, client: BacklogClient, page: list[dict], dry_run: bool, result: ScanResult, seen: set[str]
) -> int:
    """Classify one page of approved issues; returns how many the scan moved out of the list."""
    fresh = [issue for issue in page if issue["issueKey"] not in seen]
    seen.update(issue["issueKey"] for issue in fresh)
    scheduled = _scheduled_keys(tenant, [issue["issueKey"] for issue in fresh])
    result.approved += len(fresh)
    leaks = [issue for issue in fresh if not _accounted_for(issue, scheduled, result)]
    result.leaks += [issue["issueKey"] for issue in leaks]
    if dry_run:
        return 0
    rescued = leaks_rescue(tenant=tenant, client=client, keys=[issue["issueKey"] for issue in leaks])
    outcomes = {key: _record(key, outcome, result) for key, outcome in rescued.items()}
    _mark_rescued(tenant, [key for key, outcome in outcomes.items() if outcome.startswith("scheduled at")])
    return sum(not outcome.startswith(STAYS_APPROVED) for outcome in outcomes.values())


def _accounted_for(issue: dict, scheduled: set[str], result: ScanResult) -> bool:
    """Scheduled or delivered: not a leak (the decision logic would not register it either)."""
    if issue["issueKey"] in scheduled:
        result.scheduled += 1
    elif is_delivered(issue):
        result.delivered += 1
    else:
        return False
    return True


def _scheduled_keys(tenant: Tenant, keys: list[str]) -> set[str]:
    """The keys among `keys` that have a local schedule, or that automedia delivered
    since the page was listed (its write-back may be newer than the listing): one query
    per page."""
    rows = ContentTask.objects.filter(tenant=tenant, issue_key__in=keys).filter(
        Q(schedule__isnull=False) | Q(delivered_at__isnull=False)
    )
    return set(rows.values_list("issue_key", flat=True))


def is_delivered(issue: dict) -> bool:
    """Backlog's 自動配信実行日時 is set: the idempotency key of a delivery (seed 000)."""
    fields = issue.get("customFields") or []
    return any(f.get("name") == FIELD_DELIVERED_AT and f.get("value") for f in fields)


def _record(key: str, outcome: Outcome, result: ScanResult) -> str:
    if isinstance(outcome, Exception):
        result.errors.append(f"{key}: {outcome}")
        return "error"
    if outcome.startswith("scheduled at"):
        result.rescued += 1
        logger.info("scan rescued %s: %s", key, outcome)
    else:
        result.unrescued[key] = outcome
        logger.warning("scan found leak %s but did not schedule it: %s", key, outcome)
    return outcome


def _mark_rescued(tenant: Tenant, keys: list[str]) -> None:
    if keys:
        DeliverySchedule.objects.filter(
            tenant=tenant, task__issue_key__in=keys, reason=DeliverySchedule.Reason.APPROVAL
        ).update(reason=DeliverySchedule.Reason.SCAN)


# -- reverse reconcile, stuck ----------------------------------------------------------


def _reverse_reconcile(
    tenant: Tenant,
    client: BacklogClient,
    dry_run: bool,
    result: ScanResult,
    seen: set[str],
    started: datetime,
) -> None:
    for schedule_id, key in _stale_candidates(tenant, seen, started):
        try:
            if _remove_stale(tenant, client, dry_run, schedule_id, key):
                result.stale_removed.append(key)
        except RECOVERABLE as exc:
            result.errors.append(f"{key}: {exc}")


def _stale_candidates(tenant: Tenant, seen: set[str], started: datetime) -> list[tuple[int, str]]:
    """Waiting schedules (older than the scan, not held by a delivery) whose issue was not listed."""
    rows = DeliverySchedule.objects.filter(
        DeliverySchedule.free_q(started),
        tenant=tenant,
        stage=DeliverySchedule.Stage.DELIVER,
        created_at__lte=started,
    ).values_list("pk", "task__issue_key")
    # Read to the end before writing: SQLite has no isolation between a cursor and writes.
    return [(pk, key) for pk, key in rows.iterator(chunk_size=2000) if key not in seen]


def _remove_stale(tenant: Tenant, client: BacklogClient, dry_run: bool, schedule_id: int, key: str) -> bool:
    if dry_run:
        state = issue_read(client=client, issue_key=key)
        return state is None or not state.approved
    # Not listed does not prove anything (a change during paging): Backlog decides.
    issue_reconcile(tenant=tenant, issue_key=key, client=client)
    return not DeliverySchedule.objects.filter(pk=schedule_id).exists()


def stuck_keys(*, tenant: Tenant, now: datetime) -> list[str]:
    """Schedules due more than STUCK_AFTER ago whose lease is still live (report only)."""
    rows = DeliverySchedule.objects.filter(
        DeliverySchedule.held_q(now), tenant=tenant, due_at__lt=now - STUCK_AFTER
    ).order_by("due_at")
    return list(rows.values_list("task__issue_key", flat=True))


# -- every tenant ----------------------------------------------------------------------


def scan_all(
    *, tenants: Iterable[Tenant], dry_run: bool, progress: Progress | None = None, workers: int = 1
) -> list[ScanResult]:
    """Every tenant's scan, in order. `workers` > 1: that many tenants at once, each in a
    process of its own (tenants share nothing but the database; one process's Python uses
    one CPU, and a rescue is CPU work between short HTTP calls)."""
    tenants = list(tenants)
    if workers <= 1 or len(tenants) <= 1:
        return [_scan_one(tenant, dry_run, progress) for tenant in tenants]
    results = []
    for result in _parallel(_scan_in_child, [(t.pk, dry_run) for t in tenants], workers):
        if progress is not None:
            progress(result.tenant, result.approved)
        results.append(result)
    return results


def _scan_one(tenant: Tenant, dry_run: bool, progress: Progress | None) -> ScanResult:
    try:
        # Paced: thousands of rescues wait for Backlog's rate-limit reset, never draw a 429.
        with BacklogClient.for_tenant(tenant, paced=True) as client:
            with line_usage_shared():  # LINE's month count once a minute, not once per rescue
                result = scan_tenant(tenant=tenant, client=client, dry_run=dry_run, progress=progress)
            result.rate_limit_wait_s = round(client.pacer.waited, 1)
            return result
    except Exception as exc:  # one tenant's failure must not stop the others' safety net
        logger.exception("scan of %s failed", tenant.slug)
        return ScanResult(tenant=tenant.slug, errors=[f"{type(exc).__name__}: {exc}"])


def _scan_in_child(job: tuple[int, bool]) -> ScanResult:
    tenant_id, dry_run = job
    return _scan_one(Tenant.objects.get(pk=tenant_id), dry_run, None)


def _parallel(work: Callable, jobs: list, workers: int) -> Iterator[ScanResult]:
    """`work` over `jobs` in forked processes, results in job order."""
    connections.close_all()  # a forked child must open a database connection of its own
    context = multiprocessing.get_context("fork")
    with context.Pool(min(workers, len(jobs)), initializer=connections.close_all) as pool:
        yield from pool.imap(work, jobs)


def scan_run(
    *, tenants: Iterable[Tenant], dry_run: bool, progress: Progress | None = None, workers: int = 1
) -> list[ScanResult]:
    """scan_all, then `scan_finished` (the dashboard records the run)."""
    results = scan_all(tenants=tenants, dry_run=dry_run, progress=progress, workers=workers)
    scan_finished.send(sender=ScanResult, results=results, totals=scan_totals(results), dry_run=dry_run)
    return results


def scan_totals(results: list[ScanResult]) -> dict[str, int]:
    return {
        "approved": sum(r.approved for r in results),
        "scheduled": sum(r.scheduled for r in results),
        "delivered": sum(r.delivered for r in results),
        "leaks": sum(len(r.leaks) for r in results),
        "rescued": sum(r.rescued for r in results),
        "stale_removed": sum(len(r.stale_removed) for r in results),
        "stuck": sum(len(r.stuck) for r in results),
        "errors": sum(len(r.errors) for r in results),
    }


def scan_alert(results: list[ScanResult]) -> None:
    """Leaks are normally 0: any leak means a webhook path failed, so ADMINS hear of it."""
    for r in results:
        if r.errors:
            logger.error("backlog scan of %s had %d errors: %s", r.tenant, len(r.errors), r.errors[:5])
        if r.stuck:
            logger.warning("backlog scan of %s: stuck schedules %s", r.tenant, r.stuck[:REPORT_KEYS])
    leaky = [r for r in results if r.leaks]
    if not leaky:
        return
    total = sum(len(r.leaks) for r in leaky)
    lines = [f"{r.tenant}: {_named(r.leaks)} (rescued {r.rescued})" for r in leaky]
    logger.error("backlog scan found %d leaks: %s", total, "; ".join(lines))
    mail_admins(
        f"[automedia] 取りこぼしを {total} 件検出しました",
        "承認済みなのに配信予約がない課題を日次スキャンで検出しました。\n"
        "Webhook または取り込み処理に問題がないか確認してください。\n\n"
        + "\n".join(
            f"テナント {r.tenant}: 検出 {len(r.leaks)} 件、予約済みにした {r.rescued} 件\n  {_named(r.leaks)}"
            for r in leaky
        ),
    )


def _named(keys: list[str]) -> str:
    more = len(keys) - REPORT_KEYS
    return ", ".join(keys[:REPORT_KEYS]) + (f" … +{more}" if more > 0 else "")

"""The safety net: `manage.py scan_backlog` and the daily job, against the fake Backlog."""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import datetime, timedelta
from io import StringIO

import pytest
import respx
import time_machine
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError, OutputWrapper

from backlog_bridge.client import BacklogClient
from backlog_bridge.schedules import RECURRING
from core.timeutil import JST
from deliveries.management.commands.scan_backlog import ProgressBar
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.safety_net.scan import scan_all, scan_tenant
from deliveries.tasks import scan_daily
from tests.helpers.backlog import approve, body, second_tenant, texts

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
APPROVED = "automedia承認"


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


class Run:
    """Run the command; returns (exit code, stdout) as cron would see them, keeps the error."""

    def __init__(self) -> None:
        self.error = ""

    def __call__(self, *args: str) -> tuple[int, str]:
        out = StringIO()
        try:
            call_command("scan_backlog", *args, stdout=out, stderr=StringIO())
        except SystemExit as exc:
            return exc.code, out.getvalue()
        except CommandError as exc:  # manage.py prints it and exits with its returncode
            self.error = str(exc)
            return exc.returncode, out.getvalue()
        return 0, out.getvalue()


@pytest.fixture
def run() -> Run:
    return Run()


def leak(fake_backlog, project: str = "ACME", **fields) -> str:
    """An issue approved in Backlog whose webhook never reached automedia."""
    issue = fake_backlog.create_issue(
        project, summary="取りこぼし", description=body(), status=APPROVED, custom_fields=fields or None
    )
    fake_backlog.outbox.clear()
    return issue["issueKey"]


@pytest.fixture
def scheduled(fake_backlog, tenant, pump) -> str:
    """An issue approved through the webhook: it has its schedule."""
    key = fake_backlog.create_issue("ACME", summary="予約済み", description=body(), status="処理中")[
        "issueKey"
    ]
    pump(tenant)
    approve(fake_backlog, pump, tenant, key)
    return key


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def as_json(out: str) -> dict:
    return json.loads(out)


def issue_list_requests(fake_backlog) -> list:
    return [r for r in fake_backlog.requests if r.method == "GET" and r.path == "/api/v2/issues"]


def writes(fake_backlog) -> list:
    return [r for r in fake_backlog.requests if r.method != "GET"]


def test_it_rescues_a_leak_and_exits_3(fake_backlog, tenant, run):
    key = leak(fake_backlog)

    code, out = run()

    assert code == 3
    schedule = schedule_of(key)
    assert schedule.due_at == datetime(2026, 12, 10, 10, 0, tzinfo=JST)
    assert schedule.reason == DeliverySchedule.Reason.SCAN
    assert any("配信を予約しました" in t for t in texts(fake_backlog, key))
    header, row = out.splitlines()[0:2]
    assert header.split()[:5] == ["tenant", "approved", "scheduled", "delivered", "leaks"]
    assert row.split() == ["acme", "1", "0", "0", "1", "1", "0", "0", "0"]
    assert f"acme leaks: {key}" in out


def test_it_exits_0_when_every_approved_issue_is_scheduled(fake_backlog, tenant, scheduled, run):
    fake_backlog.reset_requests()

    code, out = run()

    assert code == 0
    assert out.splitlines()[1].split() == ["acme", "1", "1", "0", "0", "0", "0", "0", "0"]
    assert writes(fake_backlog) == []


def test_it_is_quiet_the_second_time_after_a_rescue(fake_backlog, tenant, run):
    leak(fake_backlog)
    assert run()[0] == 3

    assert run()[0] == 0


def test_it_does_not_count_a_delivered_task_as_a_leak(fake_backlog, tenant, run):
    key = leak(fake_backlog, **{"自動配信実行日時": "2026-11-30T10:00:00+09:00"})

    code, out = run("--json")

    assert code == 0
    totals = as_json(out)["totals"]
    assert (totals["approved"], totals["delivered"], totals["leaks"]) == (1, 1, 0)
    assert schedule_of(key) is None


def test_it_changes_nothing_on_a_dry_run_but_reports(fake_backlog, tenant, scheduled, run):
    key = leak(fake_backlog)
    fake_backlog.update_issue(scheduled, status="処理中")  # its webhook is lost too
    fake_backlog.outbox.clear()
    fake_backlog.reset_requests()

    code, out = run("--dry-run", "--json")

    assert code == 3
    result = as_json(out)["tenants"][0]
    assert (result["leaks"], result["rescued"], result["stale_removed"]) == ([key], 0, [scheduled])
    assert as_json(out)["dry_run"] is True
    assert not ContentTask.objects.filter(issue_key=key).exists()
    assert schedule_of(scheduled) is not None
    assert writes(fake_backlog) == []


def test_it_removes_a_local_schedule_whose_issue_is_no_longer_approved(fake_backlog, tenant, scheduled, run):
    fake_backlog.update_issue(scheduled, status="処理中")
    fake_backlog.outbox.clear()  # the webhook that would have deleted it never came

    code, out = run("--json")

    assert code == 0
    assert as_json(out)["tenants"][0]["stale_removed"] == [scheduled]
    assert schedule_of(scheduled) is None
    assert "配信予約を取り消しました" in texts(fake_backlog, scheduled)[-1]


def test_it_leaves_a_schedule_held_by_a_live_delivery_alone(fake_backlog, tenant, scheduled, run):
    DeliverySchedule.objects.update(lease_until=NOW + timedelta(minutes=1))
    fake_backlog.update_issue(scheduled, status="処理中")
    fake_backlog.outbox.clear()

    code, out = run("--json")

    assert (code, as_json(out)["tenants"][0]["stale_removed"]) == (0, [])
    assert schedule_of(scheduled) is not None


def test_it_reports_a_schedule_stuck_past_its_due_time(fake_backlog, tenant, scheduled, run):
    DeliverySchedule.objects.update(
        due_at=NOW - timedelta(minutes=30), lease_until=NOW + timedelta(minutes=1)
    )

    code, out = run("--json")

    assert code == 0
    assert as_json(out)["tenants"][0]["stuck"] == [scheduled]
    assert schedule_of(scheduled) is not None


def test_it_pages_through_every_approved_issue_100_at_a_time(fake_backlog, tenant, run):
    keys = {leak(fake_backlog) for _ in range(230)}
    fake_backlog.reset_requests()

    code, out = run("--dry-run", "--json")

    assert code == 3
    assert set(as_json(out)["tenants"][0]["leaks"]) == keys
    pages = issue_list_requests(fake_backlog)
    assert [(r.query["count"], r.query["offset"]) for r in pages] == [
        (["100"], ["0"]),
        (["100"], ["100"]),
        (["100"], ["200"]),
    ]


def test_it_lists_again_when_its_own_rejections_shift_the_pages(fake_backlog, tenant, run):
    bad = [
        fake_backlog.create_issue("ACME", summary="壊れ", description="本文なし", status=APPROVED)
        for _ in range(100)
    ]
    good = {leak(fake_backlog) for _ in range(20)}
    fake_backlog.outbox.clear()

    code, out = run("--json")

    result = as_json(out)["tenants"][0]
    assert code == 3
    assert result["approved"] == 120
    assert set(result["unrescued"]) == {issue["issueKey"] for issue in bad}
    assert result["rescued"] == 20
    assert set(DeliverySchedule.objects.values_list("task__issue_key", flat=True)) == good


def test_it_scans_only_the_tenant_named(fake_backlog, tenant, run):
    second_tenant(fake_backlog)
    leak(fake_backlog)
    beta_key = leak(fake_backlog, "BETA")

    code, out = run("--tenant", "beta", "--json")

    assert code == 3
    assert [t["tenant"] for t in as_json(out)["tenants"]] == ["beta"]
    assert DeliverySchedule.objects.get().task.issue_key == beta_key


def test_it_refuses_fewer_than_one_worker(tenant, run):
    code, _ = run("--workers", "0")

    assert code == 1 and run.error == "--workers must be 1 or more"


def test_it_refuses_an_unknown_tenant(tenant, run):
    code, _ = run("--tenant", "nobody")

    assert code == 1
    assert "nobody" in run.error


def test_it_prints_json_with_totals_and_one_object_per_tenant(fake_backlog, tenant, run):
    key = leak(fake_backlog)

    _, out = run("--json")

    report = as_json(out)
    assert set(report) == {"dry_run", "totals", "tenants"}
    assert report["totals"] == {
        "approved": 1,
        "scheduled": 0,
        "delivered": 0,
        "leaks": 1,
        "rescued": 1,
        "stale_removed": 0,
        "stuck": 0,
        "errors": 0,
    }
    assert report["tenants"] == [
        {
            "tenant": "acme",
            "approved": 1,
            "scheduled": 0,
            "delivered": 0,
            "leaks": [key],
            "rescued": 1,
            "unrescued": {},
            "stale_removed": [],
            "stuck": [],
            "errors": [],
            "rate_limit_wait_s": 0.0,
        }
    ]


def test_it_exits_1_when_backlog_is_down_and_still_scans_the_other_tenants(fake_backlog, tenant, run):
    second_tenant(fake_backlog)
    beta_key = leak(fake_backlog, "BETA")
    fake_backlog.fail_next(503, path_prefix="/api/v2/issues")  # acme's listing

    code, out = run("--json")

    assert code == 1
    acme, beta = as_json(out)["tenants"]
    assert "HTTP 503" in acme["errors"][0]
    assert (beta["errors"], beta["leaks"], beta["rescued"]) == ([], [beta_key], 1)
    assert run.error == "scan incomplete; errors for: acme"


def test_it_reports_progress_page_by_page(fake_backlog, tenant):
    for _ in range(150):
        leak(fake_backlog)
    seen = []

    with BacklogClient.for_tenant(tenant) as client:
        scan_tenant(
            tenant=tenant, client=client, dry_run=True, progress=lambda slug, n: seen.append((slug, n))
        )

    assert seen == [("acme", 0), ("acme", 100), ("acme", 150)]


def test_the_daily_job_alerts_admins_and_logs_an_error_on_leaks(fake_backlog, tenant, caplog):
    key = leak(fake_backlog)

    with caplog.at_level(logging.ERROR, logger="deliveries.safety_net.scan"):
        totals = scan_daily()

    assert (totals["leaks"], totals["rescued"]) == (1, 1)
    assert len(mail.outbox) == 1
    assert "[automedia] 取りこぼしを 1 件検出しました" in mail.outbox[0].subject
    assert "acme" in mail.outbox[0].body and key in mail.outbox[0].body
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and key in errors[0].getMessage()


def test_the_daily_job_is_silent_without_leaks(fake_backlog, tenant, scheduled, caplog):
    with caplog.at_level(logging.WARNING, logger="deliveries.safety_net.scan"):
        totals = scan_daily()

    assert (totals["approved"], totals["leaks"]) == (1, 0)
    assert mail.outbox == []
    assert caplog.records == []


def test_it_registers_the_daily_scan_job_after_migrate(db):
    from django_q.models import Schedule

    job = Schedule.objects.get(name="automedia-scan-backlog")
    assert (job.func, job.schedule_type, job.repeats) == (
        RECURRING["automedia-scan-backlog"]["func"],
        Schedule.DAILY,
        -1,
    )


def test_it_draws_a_progress_bar_of_tenants_and_issues():
    out = StringIO()
    bar = ProgressBar(OutputWrapper(out), total=2)

    bar("acme", 0)
    bar("acme", 1200)
    bar("beta", 300)
    bar.finish()

    frames = out.getvalue().split("\r")[1:]
    assert frames[1].startswith("[....................] 0/2 acme 1200")
    assert frames[2].startswith("[##########..........] 1/2 beta 300")
    assert frames[3] == "[####################] 2/2\x1b[K\n"


def test_it_does_not_rescue_an_issue_delivered_after_the_page_was_listed(fake_backlog, tenant, monkeypatch):
    key = leak(fake_backlog)
    real = BacklogClient.iter_issues

    def listing_then_delivery(self, **kwargs):
        for issue in real(self, **kwargs):
            # automedia delivers it between the listing and the scan's look at it
            ContentTask.objects.update_or_create(tenant=tenant, issue_key=key, defaults={"delivered_at": NOW})
            fake_backlog.update_issue(
                key, status="automedia実行済み", custom_fields={"自動配信実行日時": NOW.isoformat()}
            )
            yield issue

    monkeypatch.setattr(BacklogClient, "iter_issues", listing_then_delivery)

    result = scan_tenant(tenant=tenant, client=BacklogClient.for_tenant(tenant), dry_run=False)

    assert result.leaks == [] and result.rescued == 0
    assert schedule_of(key) is None
    assert not any("配信を予約しました" in t for t in texts(fake_backlog, key))


# -- rate limits ---------------------------------------------------------------------------


def test_it_rescues_under_a_low_rate_limit_without_a_single_429(fake_backlog, tenant, monkeypatch):
    """Backlog's per-user limits (https://developer.nulab.com/docs/backlog/rate-limit), read
    and update apart: the scan waits for each reset instead of drawing 429s."""
    keys = [leak(fake_backlog) for _ in range(7)]
    fake_backlog.set_rate_limits(read=4, update=3, window=60)
    sent_at: list[tuple[str, float]] = []
    answer = fake_backlog.answer
    monkeypatch.setattr(
        fake_backlog, "answer", lambda r: sent_at.append((r.method, time.time())) or answer(r)
    )
    with time_machine.travel(NOW, tick=False) as traveller:
        monkeypatch.setattr("backlog_bridge.ratelimit._sleep", traveller.shift)
        started = time.time()
        (result,) = scan_all(tenants=[tenant], dry_run=False)
        elapsed = time.time() - started

    assert (result.rescued, result.errors) == (7, [])
    assert fake_backlog.rate_limited == 0
    assert all(r.status != 429 for r in fake_backlog.requests)
    assert [len([t for t in texts(fake_backlog, k) if "配信を予約しました" in t]) for k in keys] == [1] * 7
    # 7 comments at 3 per window need 3 windows; no window got more than its limit.
    assert elapsed >= 120 and result.rate_limit_wait_s >= 120
    per_window: dict[tuple[str, int], int] = {}
    for method, at in sent_at:
        group = (method == "GET", int(at // 60))
        per_window[group] = per_window.get(group, 0) + 1
    assert max(n for (read, _), n in per_window.items() if not read) <= 3


def test_a_second_paced_scan_changes_nothing(fake_backlog, tenant, monkeypatch):
    leak(fake_backlog)
    fake_backlog.set_rate_limits(read=3, update=2, window=60)
    with time_machine.travel(NOW, tick=False) as traveller:
        monkeypatch.setattr("backlog_bridge.ratelimit._sleep", traveller.shift)
        scan_all(tenants=[tenant], dry_run=False)
        fake_backlog.reset_requests()
        (second,) = scan_all(tenants=[tenant], dry_run=False)

    assert (second.leaks, second.rescued, second.errors) == ([], 0, [])
    assert writes(fake_backlog) == [] and fake_backlog.rate_limited == 0


# -- tenants in parallel -----------------------------------------------------------------


def test_it_runs_the_work_in_forked_processes_and_keeps_the_order():
    from deliveries.safety_net.scan import _parallel

    pids = list(_parallel(_pid_of, [3, 1, 2], workers=2))

    assert [n for n, _ in pids] == [3, 1, 2]
    assert os.getpid() not in {pid for _, pid in pids}


def _pid_of(n: int) -> tuple[int, int]:
    return n, os.getpid()


def test_it_scans_each_tenant_once_with_workers_and_reports_progress_per_tenant(
    fake_backlog, tenant, monkeypatch
):
    beta = second_tenant(fake_backlog)
    keys = {"acme": leak(fake_backlog), "beta": leak(fake_backlog, "BETA")}
    jobs = []
    # The test database lives in this process: the children's work runs here, in order.
    monkeypatch.setattr(
        "deliveries.safety_net.scan._parallel", lambda work, js, workers: (jobs.extend(js), map(work, js))[1]
    )
    seen = []

    results = scan_all(tenants=[tenant, beta], dry_run=False, workers=2, progress=lambda *a: seen.append(a))

    assert jobs == [(tenant.pk, False), (beta.pk, False)]
    assert [(r.tenant, r.leaks, r.rescued) for r in results] == [
        ("acme", [keys["acme"]], 1),
        ("beta", [keys["beta"]], 1),
    ]
    assert seen == [("acme", 1), ("beta", 1)]


# -- approval-time checks in a rescue ---------------------------------------------------------


@pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx
def test_its_rescues_ask_line_for_the_months_count_once_and_still_count_each_other(
    fake_backlog, tenant, template, contacts, settings
):
    settings.LINE_API_BASE_URL = "https://api.line.test"
    keys = [leak(fake_backlog) for _ in range(3)]
    with respx.mock(assert_all_called=False) as line:
        line.route(host="127.0.0.1").pass_through()  # the fake Backlog
        validate = line.post(url__regex=r"/v2/bot/message/validate/").respond(200, json={})
        quota = line.get("https://api.line.test/v2/bot/message/quota").respond(200, json={"type": "none"})
        used = line.get("https://api.line.test/v2/bot/message/quota/consumption").respond(
            200, json={"totalUsage": 182}
        )
        (result,) = scan_all(tenants=[tenant], dry_run=False)

    assert result.rescued == 3
    assert (validate.call_count, quota.call_count, used.call_count) == (3, 1, 1)
    forecasts = [next(t for t in texts(fake_backlog, k) if "配信を予約しました" in t) for k in keys]
    # Each rescue's 3 messages are counted by the next ones (scheduled, not sent yet).
    assert [
        "今月 182 / 上限なし" in forecasts[0],
        "今月 182 / 上限なし、予約済みで未送信 3 通" in forecasts[1],
        "今月 182 / 上限なし、予約済みで未送信 6 通" in forecasts[2],
    ] == [True] * 3

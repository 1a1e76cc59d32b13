"""What the dashboard reads is recorded where it happens: delivery endings and scan summaries."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from console.models import DeliveryOutcome, ScanRun
from tests.helpers.deliveries import MULTICAST, run_task

Kind = DeliveryOutcome.Kind


def test_it_records_a_sent_delivery(approved):
    key = approved()

    assert run_task(key) == "delivered"

    outcome = DeliveryOutcome.objects.get()
    assert (outcome.task.issue_key, outcome.kind) == (key, Kind.SENT)


def test_it_records_a_skipped_delivery(approved, fake_backlog):
    key = approved()
    fake_backlog.update_issue(key, status="処理中")  # its webhook is not delivered: the run finds out

    assert run_task(key) == "no longer approved"

    assert DeliveryOutcome.objects.get().kind == Kind.SKIPPED


def test_it_records_a_failed_delivery_but_not_a_retry(approved, line):
    key = approved()
    line.fail_next(500, path_prefix=MULTICAST)

    assert run_task(key).startswith("retry in")
    assert not DeliveryOutcome.objects.exists()

    line.fail_next(400, path_prefix=MULTICAST)
    assert run_task(key) == "failed"
    assert DeliveryOutcome.objects.get().kind == Kind.FAILED


@pytest.mark.django_db
def test_it_records_each_scan(fake_backlog, tenant):
    fake_backlog.create_issue("ACME", summary="取りこぼし", description="", status="automedia承認")

    with pytest.raises(SystemExit):  # exit 3: leaks found
        call_command("scan_backlog", "--dry-run", stdout=StringIO(), stderr=StringIO())

    run = ScanRun.objects.get()
    assert (run.dry_run, run.totals["leaks"], run.results[0]["leaks"]) == (True, 1, ["ACME-1"])

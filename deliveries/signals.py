"""Lifecycle events other apps react to (linepush posts about them), without being imported here."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once per approval registered (not for a reschedule), after its schedule is written;
# kwargs: task (ContentTask).
task_approved = Signal()

# Sent after each scan (the daily job or manage.py scan_backlog), for the dashboard;
# kwargs: results (list of deliveries.scan.ScanResult), totals (dict), dry_run (bool).
scan_finished = Signal()

"""Lifecycle events the layers above react to without being imported here (linepush posts
about approvals; the managers' dashboard, `console`, records outcomes and scans)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once per approval registered (not for a reschedule), after its schedule is written;
# kwargs: task (ContentTask).
task_approved = Signal()

# Sent after each scan (the daily job or manage.py scan_backlog), for the dashboard;
# kwargs: results (list of deliveries.scan.ScanResult), totals (dict), dry_run (bool).
scan_finished = Signal()

# A delivery task finished one claimed schedule. Keywords: tenant_id, task_id, result
# (`delivery_run`'s result, or "error" when it raised).
delivery_finished = Signal()

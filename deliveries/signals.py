"""Lifecycle events the layers above react to without being imported here (linepush posts
about approvals; the managers' dashboard, `console`, records outcomes and scans)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once per approval registered (not for a reschedule), after its schedule is written;
# kwargs: task (ContentTask).
task_approved = Signal()

# Sent after each scan (the daily job or manage.py scan_backlog), for the dashboard;
# kwargs: results (list of deliveries.safety_net.scan.ScanResult), totals (dict), dry_run (bool).
scan_finished = Signal()

# A delivery task finished one claimed schedule. Keywords: tenant_id, task_id, result
# (`delivery_run`'s result, or "error" when it raised).
delivery_finished = Signal()

# A delivery ended in automediaエラー: sent once its write-back is done (again only if a
# crash repeats the write-back). Keywords: task (ContentTask), reason (Japanese), auth
# (True when the channel refused its token). linepush posts the failure notice.
delivery_failed = Signal()

# A channel's token was found expired or refused. Keywords: tenant, channel ("line",
# "instagram", ...), issue_key (the task whose send found it; "" for the daily refresh),
# reason. linepush posts the failure notice into that task's 連絡グループ.
token_expired = Signal()

# An approval was refused (moved to automediaエラー with a comment saying why), before any
# request went out. Keywords: task (ContentTask), reason (RefusalReason: what refused it),
# message (the comment's text, Japanese). console records it for the dashboard.
approval_refused = Signal()

"""console's recurring job (backlog_bridge/schedules.py lists it)."""

from __future__ import annotations

from django.utils import timezone

from console.notices import notices_run


def attention_notices() -> int:
    """The notices of new 要対応 rows (console/notices.py)."""
    return notices_run(now=timezone.now())

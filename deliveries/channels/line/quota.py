"""The LINE quota forecast of one delivery, as its approval and its narrowcast state it:
LINE's figures and the month's other senders from line/forecast.py, the deliveries
scheduled in that month and not sent yet counted here (each approval keeps what its send
costs, `approval_checks["line_messages"]`)."""

from __future__ import annotations

from datetime import datetime

from core.models import Tenant
from deliveries.models import ContentTask, DeliverySchedule
from line.forecast import Forecast, Plan, line_forecast


def quota_forecast(
    *, tenant: Tenant, plan: Plan, due_at: datetime, now: datetime, task: ContentTask | None
) -> Forecast:
    """The forecast of sending to `plan` at `due_at` (`task`'s own schedule is not counted twice)."""
    return line_forecast(
        tenant=tenant,
        plan=plan,
        due_at=due_at,
        now=now,
        pending=lambda start, end: _pending_deliveries(tenant, start, end, task),
    )


def _pending_deliveries(tenant: Tenant, start: datetime, end: datetime, task: ContentTask | None) -> int:
    schedules = DeliverySchedule.objects.filter(
        tenant=tenant, stage=DeliverySchedule.Stage.DELIVER, due_at__gte=start, due_at__lt=end
    )
    if task is not None:
        schedules = schedules.exclude(task=task)
    checks = schedules.values_list("task__approval_checks", flat=True)
    return sum(int((c or {}).get("line_messages") or 0) for c in checks)

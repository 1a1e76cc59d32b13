"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

from console.records import delivery_outcome_record
from deliveries.delivery import delivery_run
from deliveries.effects import effect_reports_run
from deliveries.models import DeliverySchedule


def deliver(schedule_id: int, token: str) -> str:
    # Read before the run: a delivery that ends deletes its schedule.
    row = DeliverySchedule.objects.filter(pk=schedule_id).values("tenant_id", "task_id").first()
    result = delivery_run(schedule_id=schedule_id, token=token)
    if row is not None:
        delivery_outcome_record(**row, result=result)  # the dashboard's outcomes per day
    return result


def effect_reports() -> int:
    """Every 10 minutes: post the 24 h / 72 h effect-measurement comments that are due."""
    return effect_reports_run()


def channel_tokens() -> dict[str, int]:
    """Daily: refresh Instagram / TikTok tokens before they expire (deliveries/tokens.py)."""
    from deliveries.tokens import channel_tokens_upkeep

    return channel_tokens_upkeep()

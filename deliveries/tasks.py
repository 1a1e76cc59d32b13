"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

import logging

from console.records import delivery_outcome_record
from deliveries.delivery import delivery_run
from deliveries.effects import effect_reports_run
from deliveries.models import DeliverySchedule

logger = logging.getLogger(__name__)


def deliver(schedule_id: int, token: str) -> str:
    # Read before the run: a delivery that ends deletes its schedule.
    row = DeliverySchedule.objects.filter(pk=schedule_id).values("tenant_id", "task_id").first()
    result = delivery_run(schedule_id=schedule_id, token=token)
    if row is not None:
        delivery_outcome_record(**row, result=result)  # the dashboard's outcomes per day
    return result


def deliver_batch(claims: list[tuple[int, str]]) -> list[str]:
    """Several claimed schedules in one task (run_scheduler groups what one pass claimed):
    django-q2's own cost per task is paid once per batch. One delivery's unexpected error
    does not stop the others; its row is claimed again when its lease expires."""
    results = []
    for schedule_id, token in claims:
        try:
            results.append(deliver(schedule_id, token))
        except Exception:
            logger.exception("delivery of schedule %s failed", schedule_id)
            results.append("error")
    return results


def effect_reports() -> int:
    """Every 10 minutes: post the 24 h / 72 h effect-measurement comments that are due."""
    return effect_reports_run()


def channel_tokens() -> dict[str, int]:
    """Daily: refresh Instagram / TikTok tokens before they expire (deliveries/tokens.py)."""
    from deliveries.tokens import channel_tokens_upkeep

    return channel_tokens_upkeep()

"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

from deliveries.delivery import delivery_run
from deliveries.effects import effect_reports_run


def deliver(schedule_id: int, token: str) -> str:
    return delivery_run(schedule_id=schedule_id, token=token)


def effect_reports() -> int:
    """Every 10 minutes: post the 24 h / 72 h effect-measurement comments that are due."""
    return effect_reports_run()

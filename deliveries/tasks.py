"""django-q2 task entry points (import paths are stored in the queue: keep them stable)."""

from __future__ import annotations

from deliveries.delivery import delivery_run


def deliver(schedule_id: int, token: str) -> str:
    return delivery_run(schedule_id=schedule_id, token=token)

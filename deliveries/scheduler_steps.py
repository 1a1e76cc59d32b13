"""The steps of run_scheduler's pass, one per queue, registered in the apps'
AppConfig.ready so the loop imports none of them: due schedules and stranded Backlog
events (deliveries' ready), due group posts and stranded LINE events (linepush's)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class SchedulerStep(Protocol):
    def __call__(self, *, now: datetime, limit: int) -> bool:
        """Hand due work to workers; True when something was due (the loop looks again at once)."""


SCHEDULER_STEPS: list[SchedulerStep] = []


def scheduler_step_register(step: SchedulerStep) -> None:
    if step not in SCHEDULER_STEPS:  # ready() may run more than once in tests
        SCHEDULER_STEPS.append(step)


def scheduler_steps_run(*, now: datetime, limit: int) -> bool:
    """Every registered step, each every pass; True when any had work."""
    return any([step(now=now, limit=limit) for step in SCHEDULER_STEPS])

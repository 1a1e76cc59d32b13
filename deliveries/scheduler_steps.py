"""The steps of run_scheduler's pass, one per queue, registered in the apps'
AppConfig.ready so the loop imports none of them: due schedules and stranded Backlog
events (deliveries' ready), due group posts and stranded LINE events (linepush's)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Protocol


class Pass(Enum):
    """What one pass of the steps found, and so how soon the loop looks again."""

    IDLE = "idle"  # nothing due: sleep until the next due row, at most the poll
    WORKED = "worked"  # work was handed out: look again at once, more may be due
    HELD = "held"  # due work waits only for workers to start what is queued: look again soon


class SchedulerStep(Protocol):
    def __call__(self, *, now: datetime, limit: int) -> bool | Pass:
        """Hand due work to workers; True (Pass.WORKED) when something was handed out,
        False (Pass.IDLE) when nothing was due, Pass.HELD when due work waits for room that
        the workers free as they start their tasks (a queue's cap on what waits for them)."""


SCHEDULER_STEPS: list[SchedulerStep] = []


def scheduler_step_register(step: SchedulerStep) -> None:
    if step not in SCHEDULER_STEPS:  # ready() may run more than once in tests
        SCHEDULER_STEPS.append(step)


def scheduler_steps_run(*, now: datetime, limit: int) -> Pass:
    """Every registered step, each every pass: WORKED when any handed out work, else HELD
    when any holds due work back, else IDLE."""
    found = {_as_pass(step(now=now, limit=limit)) for step in SCHEDULER_STEPS}
    return next((p for p in (Pass.WORKED, Pass.HELD) if p in found), Pass.IDLE)


def _as_pass(answer: bool | Pass) -> Pass:
    if isinstance(answer, Pass):
        return answer
    return Pass.WORKED if answer else Pass.IDLE

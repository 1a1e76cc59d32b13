"""The steps of run_scheduler's pass, one per queue. settings.SCHEDULER_STEPS names them in
order, as MIDDLEWARE names Django's middleware: the composition root lists every queue the
pass serves (the lower layers' stranded webhook events, linepush's group posts above), so
the loop imports none of them and a reader finds them all in one place."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string


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


def scheduler_steps() -> tuple[SchedulerStep, ...]:
    """The steps settings.SCHEDULER_STEPS names, in its order."""
    return _imported(tuple(settings.SCHEDULER_STEPS))


@lru_cache(maxsize=8)
def _imported(paths: tuple[str, ...]) -> tuple[SchedulerStep, ...]:
    # Keyed by the paths, not read once for good: a test that changes the setting gets its steps.
    steps = []
    for path in paths:
        try:
            steps.append(import_string(path))
        except ImportError as exc:
            raise ImproperlyConfigured(f"SCHEDULER_STEPS: {path!r} does not import ({exc})") from exc
    return tuple(steps)


def scheduler_steps_run(*, now: datetime, limit: int) -> Pass:
    """Every configured step, each every pass: WORKED when any handed out work, else HELD
    when any holds due work back, else IDLE."""
    found = {_as_pass(step(now=now, limit=limit)) for step in scheduler_steps()}
    return next((p for p in (Pass.WORKED, Pass.HELD) if p in found), Pass.IDLE)


def _as_pass(answer: bool | Pass) -> Pass:
    if isinstance(answer, Pass):
        return answer
    return Pass.WORKED if answer else Pass.IDLE

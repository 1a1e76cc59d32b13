"""django-q2 task entry points of the LINE webhook's events (import paths are stored in the
queue: keep them stable)."""

from __future__ import annotations

from line.events import line_event_process, line_events_drain, line_events_retry


def process_line_event(event_id: int) -> str:
    """One event (the webhook's task of earlier versions; rows already queued may still name it)."""
    return line_event_process(event_id=event_id)


def process_line_events() -> int:
    """Every due LINE event (the webhook and run_scheduler's stranded-events step enqueue this)."""
    return line_events_drain()


def retry_line_events() -> int:
    """Every 5 minutes: accepted LINE events the broker lost, or that failed, run again."""
    return line_events_retry()

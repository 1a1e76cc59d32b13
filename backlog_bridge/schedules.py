"""Recurring django-q2 jobs, created (idempotently) after every migrate."""

from __future__ import annotations

RECURRING = {
    "automedia-backlog-catchup": {
        "func": "backlog_bridge.tasks.catchup_all",
        "schedule_type": "I",  # minutes
        "minutes": 5,
    },
    "automedia-effect-reports": {
        "func": "deliveries.tasks.effect_reports",
        "schedule_type": "I",  # minutes
        "minutes": 10,
    },
    "automedia-scan-backlog": {
        "func": "backlog_bridge.tasks.scan_daily",
        "schedule_type": "D",  # daily: the safety net (manage.py scan_backlog)
    },
}


def ensure_recurring_jobs(**kwargs) -> None:
    from django_q.models import Schedule

    for name, spec in RECURRING.items():
        Schedule.objects.update_or_create(name=name, defaults={**spec, "repeats": -1})

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
        "func": "deliveries.tasks.scan_daily",
        "schedule_type": "D",  # daily: the safety net (manage.py scan_backlog)
    },
    # Instagram / TikTok token refresh before expiry (deliveries/channels/token_upkeep.py).
    "automedia-channel-tokens": {"func": "deliveries.tasks.channel_tokens", "schedule_type": "D"},
    # LINE group posts (linepush): producers, the quota check.
    "automedia-linepush-reminders": {"func": "linepush.tasks.reminders_hourly", "schedule_type": "H"},
    "automedia-linepush-escalations": {"func": "linepush.tasks.escalations_daily", "schedule_type": "D"},
    # Hourly: each tenant's digest is queued for 08:00 in its own time zone.
    "automedia-linepush-morning-digest": {
        "func": "linepush.tasks.morning_digest_hourly",
        "schedule_type": "H",
    },
    "automedia-linepush-quota-check": {"func": "linepush.tasks.quota_check_daily", "schedule_type": "D"},
    # The retention policy (core/retention.py; manage.py prune_records).
    "automedia-prune-records": {"func": "core.retention.records_prune_scheduled", "schedule_type": "D"},
    # New 要対応 rows to the tenants' managers, a minute's burst in one message.
    "automedia-attention-notices": {
        "func": "console.tasks.attention_notices",
        "schedule_type": "I",
        "minutes": 1,
    },
    # Lost LINE webhook events (line/events.py); the name is older than the line app.
    "automedia-linepush-event-retry": {
        "func": "line.tasks.retry_line_events",
        "schedule_type": "I",
        "minutes": 5,
    },
}


def ensure_recurring_jobs(**kwargs) -> None:
    from django_q.models import Schedule

    for name, spec in RECURRING.items():
        Schedule.objects.update_or_create(name=name, defaults={**spec, "repeats": -1})

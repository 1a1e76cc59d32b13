"""Data migrations of deliveries."""

from __future__ import annotations

from importlib import import_module

from django.apps import apps
from django_q.models import Schedule

scan_path = import_module("deliveries.migrations.0011_scan_daily_task_path")  # a name Python cannot import


def test_it_points_a_stored_daily_scan_schedule_at_the_moved_task(db):
    Schedule.objects.create(name="cron-scan", func="backlog_bridge.tasks.scan_daily", schedule_type="D")
    scan_path.forward(apps, None)
    assert Schedule.objects.get(name="cron-scan").func == "deliveries.tasks.scan_daily"
    scan_path.backward(apps, None)
    assert Schedule.objects.get(name="cron-scan").func == "backlog_bridge.tasks.scan_daily"

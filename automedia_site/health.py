"""Operability: `/healthz` (JSON, 200 or 503 naming each check) and `/metrics`."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Max, Min, Q
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from deliveries.models import DeliverySchedule, SchedulerHeartbeat


def _overdue(now: datetime) -> Q:
    """Due, not being worked on, and late by more than a grace second."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lte=now)
    return Q(due_at__lt=now - timedelta(seconds=1)) & free


def check_database(now: datetime) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"ok": True, "vendor": connection.vendor}


def check_broker(now: datetime) -> dict:
    from django_q.brokers import get_broker

    broker = get_broker()
    return {"ok": bool(broker.ping()), "broker": type(broker).__name__, "queued": broker.queue_size()}


def check_scheduler(now: datetime) -> dict:
    last = SchedulerHeartbeat.objects.aggregate(last=Max("last_beat"))["last"]
    if last is None:
        return {"ok": False, "error": "no scheduler has ever run (manage.py run_scheduler)"}
    age = (now - last).total_seconds()
    return {"ok": age <= settings.HEALTH_HEARTBEAT_MAX_AGE, "heartbeat_age_seconds": round(age, 1)}


def check_overdue(now: datetime) -> dict:
    oldest = DeliverySchedule.objects.filter(_overdue(now)).aggregate(oldest=Min("due_at"))["oldest"]
    age = (now - oldest).total_seconds() if oldest else 0.0
    return {"ok": age <= settings.HEALTH_OVERDUE_MAX_SECONDS, "oldest_overdue_seconds": round(age, 1)}


CHECKS: dict[str, Callable[[datetime], dict]] = {
    "database": check_database,
    "broker": check_broker,
    "scheduler": check_scheduler,
    "overdue_schedules": check_overdue,
}


def healthz(request) -> JsonResponse:
    now = timezone.now()
    results = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check(now)
        except Exception as exc:  # a failing dependency is a result, not a 500
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    ok = all(r["ok"] for r in results.values())
    return JsonResponse({"status": "ok" if ok else "fail", "checks": results}, status=200 if ok else 503)


class ScheduleCollector:
    """Gauges read from the database at scrape time (true across all processes)."""

    def collect(self):
        now = timezone.now()
        overdue = GaugeMetricFamily("automedia_schedules_overdue", "Due schedules nobody is working on")
        overdue.add_metric([], DeliverySchedule.objects.filter(_overdue(now)).count())
        waiting = GaugeMetricFamily("automedia_schedules_waiting", "Schedules by stage", labels=["stage"])
        for stage in DeliverySchedule.Stage.values:
            waiting.add_metric([stage], DeliverySchedule.objects.filter(stage=stage).count())
        yield overdue
        yield waiting


def metrics_view(request) -> HttpResponse:
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    output = generate_latest(registry) + generate_latest(_schedule_registry())
    return HttpResponse(output, content_type=CONTENT_TYPE_LATEST)


def _schedule_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ScheduleCollector())
    return registry

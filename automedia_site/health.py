"""Operability: `/healthz` (JSON, 200 or 503 naming each check) and `/metrics`
(Prometheus; a bearer token when METRICS_TOKEN is set)."""

from __future__ import annotations

import hmac
import logging
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

logger = logging.getLogger(__name__)


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
    """Each check's name and state only: /healthz is public, and a failure's details
    (exception text with internal host names and ports, ages) go to the log."""
    now = timezone.now()
    states = {name: "ok" if _check_passes(name, check, now) else "fail" for name, check in CHECKS.items()}
    ok = all(state == "ok" for state in states.values())
    return JsonResponse({"status": "ok" if ok else "fail", "checks": states}, status=200 if ok else 503)


def _check_passes(name: str, check: Callable[[datetime], dict], now: datetime) -> bool:
    try:
        result = check(now)
    except Exception:  # a failing dependency is a result, not a 500
        logger.warning("health check %s failed", name, exc_info=True)
        return False
    if not result["ok"]:
        logger.warning("health check %s failed: %s", name, result)
    return result["ok"]


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
    if not settings.METRICS_TOKEN and not (settings.DEBUG or settings.METRICS_PUBLIC):
        return HttpResponse(
            "metrics are off: set METRICS_TOKEN (or METRICS_PUBLIC=true to serve them to anyone)\n",
            status=403,
        )
    if not _metrics_allowed(request):
        response = HttpResponse("metrics need Authorization: Bearer <METRICS_TOKEN>\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    output = generate_latest(registry) + generate_latest(_schedule_registry())
    return HttpResponse(output, content_type=CONTENT_TYPE_LATEST)


def _metrics_allowed(request) -> bool:
    """Open when METRICS_TOKEN is unset (DEBUG, or METRICS_PUBLIC); else the bearer token,
    compared in constant time."""
    if not settings.METRICS_TOKEN:
        return True
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), settings.METRICS_TOKEN.encode()
    )


def _schedule_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ScheduleCollector())
    return registry

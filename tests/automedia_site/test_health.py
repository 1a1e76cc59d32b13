"""`/healthz` names each check and answers 503 when one fails; `/metrics` speaks Prometheus."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from deliveries.models import SchedulerHeartbeat
from tests.deliveries.test_scheduler import make_schedule

pytestmark = pytest.mark.django_db


def beat(age_seconds: float = 0.0) -> None:
    SchedulerHeartbeat.objects.create(
        name="sched-1", last_beat=timezone.now() - timedelta(seconds=age_seconds)
    )


def test_it_answers_200_when_every_check_passes(client):
    beat()

    response = client.get("/healthz")

    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "ok"
    assert set(data["checks"]) == {"database", "broker", "scheduler", "overdue_schedules"}
    assert data["checks"]["scheduler"]["heartbeat_age_seconds"] < 5


def test_it_answers_503_when_no_scheduler_has_run(client):
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"]["ok"] is False


def test_it_answers_503_for_a_stalled_scheduler(client, settings):
    beat(age_seconds=settings.HEALTH_HEARTBEAT_MAX_AGE + 5)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"]["heartbeat_age_seconds"] > settings.HEALTH_HEARTBEAT_MAX_AGE


def test_it_answers_503_for_an_old_overdue_schedule(client, settings):
    beat()
    make_schedule(due_in=-(settings.HEALTH_OVERDUE_MAX_SECONDS + 30))

    response = client.get("/healthz")

    assert response.status_code == 503
    assert (
        response.json()["checks"]["overdue_schedules"]["oldest_overdue_seconds"]
        > settings.HEALTH_OVERDUE_MAX_SECONDS
    )


def test_it_reports_a_failing_check_instead_of_a_500(client, monkeypatch):
    beat()
    from automedia_site import health

    def broken(now):
        raise ConnectionError("broker down")

    monkeypatch.setitem(health.CHECKS, "broker", broken)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert "broker down" in response.json()["checks"]["broker"]["error"]


def test_it_exposes_delivery_metrics(client):
    from automedia_site import metrics

    metrics.delivery_ended("sent", "line")
    metrics.fired(0.2)
    metrics.outbound_call("line", "200")
    make_schedule(due_in=-120)

    text = client.get("/metrics").content.decode()

    assert 'automedia_deliveries_total{channel="line",outcome="sent"}' in text
    assert "automedia_firing_lateness_seconds_bucket" in text
    assert 'automedia_outbound_calls_total{service="line",status="200"}' in text
    assert "automedia_schedules_overdue 1.0" in text

"""`/healthz` names each check and answers 503 when one fails; `/metrics` speaks Prometheus."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from deliveries.models import SchedulerHeartbeat
from tests.helpers.deliveries import make_schedule

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
    assert data["checks"] == {"database": "ok", "broker": "ok", "scheduler": "ok", "overdue_schedules": "ok"}


def test_it_answers_503_when_no_scheduler_has_run(client):
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"] == "fail"


def test_it_answers_503_for_a_stalled_scheduler(client, settings, caplog):
    beat(age_seconds=settings.HEALTH_HEARTBEAT_MAX_AGE + 5)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"] == "fail"
    assert "health check scheduler failed" in caplog.text and "heartbeat_age_seconds" in caplog.text


def test_it_answers_503_for_an_old_overdue_schedule(client, settings):
    beat()
    make_schedule(due_in=-(settings.HEALTH_OVERDUE_MAX_SECONDS + 30))

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["checks"]["overdue_schedules"] == "fail"


def test_it_reports_a_failing_check_by_name_only_and_logs_why(client, monkeypatch, caplog):
    beat()
    from automedia_site import health

    def broken(now):
        raise ConnectionError("redis.internal:6379 refused")

    monkeypatch.setitem(health.CHECKS, "broker", broken)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "fail",
        "checks": {"database": "ok", "broker": "fail", "scheduler": "ok", "overdue_schedules": "ok"},
    }
    assert "redis.internal" not in response.content.decode()  # internals go to the log only
    assert "health check broker failed" in caplog.text and "redis.internal:6379 refused" in caplog.text


def test_it_exposes_delivery_metrics(client, settings):
    from core import metrics

    settings.METRICS_TOKEN = "scrape-secret"
    metrics.delivery_ended("sent", "line")
    metrics.fired(0.2)
    metrics.outbound_call("line", "200")
    make_schedule(due_in=-120)

    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret").content.decode()

    assert 'automedia_deliveries_total{channel="line",outcome="sent"}' in text
    assert "automedia_firing_lateness_seconds_bucket" in text
    assert 'automedia_outbound_calls_total{service="line",status="200"}' in text
    assert "automedia_schedules_overdue 1.0" in text


def test_metrics_need_the_bearer_token_when_one_is_set(client, settings):
    settings.METRICS_TOKEN = "scrape-secret"

    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic scrape-secret").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret")
    assert response.status_code == 200
    assert "automedia_schedules_overdue" in response.content.decode()


def test_metrics_are_refused_outside_debug_when_no_token_is_set(client, settings):
    settings.METRICS_TOKEN, settings.DEBUG, settings.METRICS_PUBLIC = "", False, False

    response = client.get("/metrics")

    assert response.status_code == 403
    assert "automedia_" not in response.content.decode()


@pytest.mark.parametrize("switch", ["DEBUG", "METRICS_PUBLIC"])
def test_metrics_are_open_without_a_token_with_debug_or_when_public(client, settings, switch):
    settings.METRICS_TOKEN, settings.DEBUG, settings.METRICS_PUBLIC = "", False, False
    setattr(settings, switch, True)

    assert client.get("/metrics").status_code == 200

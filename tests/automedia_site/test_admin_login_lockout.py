"""Admin logins are rate-limited (django-axes): AXES_FAILURE_LIMIT failed attempts lock that
username from that IP address out for AXES_COOLOFF_HOURS, even with the right password."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-staple"
ATTACKER = "203.0.113.5"
OFFICE = "198.51.100.7"


@pytest.fixture(autouse=True)
def staff():
    User.objects.create_user("manager", password=PASSWORD, is_staff=True)
    User.objects.create_user("viewer", password=PASSWORD, is_staff=True)


def log_in(username: str, password: str, ip: str):
    client = Client(REMOTE_ADDR=ip)
    response = client.post("/admin/login/", {"username": username, "password": password, "next": "/admin/"})
    return response, "_auth_user_id" in client.session


def fail(times: int, username: str = "manager", ip: str = ATTACKER) -> None:
    for _ in range(times):
        assert log_in(username, "guessed", ip)[1] is False


def test_it_locks_a_user_and_ip_out_after_the_failure_limit(settings):
    fail(settings.AXES_FAILURE_LIMIT)

    response, logged_in = log_in("manager", PASSWORD, ATTACKER)

    assert (response.status_code, logged_in) == (429, False)
    assert "ログインできません" in response.content.decode()


def test_the_same_user_from_another_ip_and_another_user_from_that_ip_still_log_in(settings):
    fail(settings.AXES_FAILURE_LIMIT)

    assert log_in("manager", PASSWORD, OFFICE)[1] is True
    assert log_in("viewer", PASSWORD, ATTACKER)[1] is True


def test_fewer_failures_than_the_limit_do_not_lock_out(settings):
    fail(settings.AXES_FAILURE_LIMIT - 1)

    response, logged_in = log_in("manager", PASSWORD, ATTACKER)

    assert (response.status_code, logged_in) == (302, True)


def test_the_lockout_ends_after_the_cool_off(settings):
    fail(settings.AXES_FAILURE_LIMIT)

    with time_machine.travel(timezone.now() + settings.AXES_COOLOFF_TIME + timedelta(minutes=1)):
        assert log_in("manager", PASSWORD, ATTACKER)[1] is True

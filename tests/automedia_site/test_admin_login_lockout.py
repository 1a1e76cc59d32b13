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


PROXY = "10.0.0.2"


def log_in_via_proxy(username: str, password: str, forwarded: str):
    client = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded)
    response = client.post("/admin/login/", {"username": username, "password": password, "next": "/admin/"})
    return response, "_auth_user_id" in client.session


@pytest.fixture
def behind_one_proxy(settings):
    """What AXES_IPWARE_PROXY_COUNT=0 sets (automedia_site/settings.py)."""
    settings.AXES_IPWARE_PROXY_COUNT = 0
    settings.AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    settings.IPWARE_STRICT = False


def test_behind_a_counted_proxy_a_guesser_locks_out_only_their_own_address(settings, behind_one_proxy):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert log_in_via_proxy("manager", "guessed", ATTACKER)[1] is False

    assert log_in_via_proxy("manager", PASSWORD, ATTACKER)[0].status_code == 429
    assert log_in_via_proxy("manager", PASSWORD, f"{OFFICE}, {ATTACKER}")[0].status_code == 429  # forged
    assert log_in_via_proxy("manager", PASSWORD, OFFICE)[1] is True  # the real user, elsewhere


def test_without_a_proxy_count_x_forwarded_for_is_never_read(settings):
    for n in range(settings.AXES_FAILURE_LIMIT):
        assert log_in_via_proxy("manager", "guessed", f"192.0.2.{n}")[1] is False  # a client's own header

    assert log_in_via_proxy("manager", PASSWORD, OFFICE)[0].status_code == 429  # all one address

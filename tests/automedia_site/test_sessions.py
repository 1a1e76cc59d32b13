"""An admin session ends after SESSION_IDLE_TIMEOUT_SECONDS (8 hours) without a request;
a request starts the idle time again (saving the session at most once a minute).
Passwords go through Django's full set of checks."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.timeutil import JST

pytestmark = pytest.mark.django_db
START = datetime(2026, 12, 1, 9, 0, tzinfo=JST)


def logged_in(client):
    user = get_user_model().objects.create_superuser("boss", "boss@example.jp", "a-long-passphrase-2026")
    client.force_login(user)
    return client


def test_an_idle_session_ends_after_eight_hours(client):
    with time_machine.travel(START, tick=False):
        logged_in(client)
        assert client.get("/admin/").status_code == 200

    with time_machine.travel(START + timedelta(hours=8, seconds=1), tick=False):
        response = client.get("/admin/")

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_each_request_starts_the_idle_time_again(client):
    with time_machine.travel(START, tick=False):
        logged_in(client)
    for hours in (7, 14, 21):
        with time_machine.travel(START + timedelta(hours=hours), tick=False):
            assert client.get("/admin/").status_code == 200


def session_writes(client, at: datetime) -> list[str]:
    with time_machine.travel(at, tick=False), CaptureQueriesContext(connection) as queries:
        client.get("/admin/")
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("UPDATE") and "django_session" in q["sql"]
    ]


def test_a_request_saves_the_session_at_most_once_a_minute(client):
    with time_machine.travel(START, tick=False):
        logged_in(client)

    assert session_writes(client, START + timedelta(seconds=30)) == []
    assert len(session_writes(client, START + timedelta(seconds=61))) == 1


@pytest.mark.parametrize(
    "password",
    ["boss@example.jp", "20261201", "password", "short7!"],
    ids=["like-the-user", "numeric", "common", "too-short"],
)
def test_it_refuses_a_weak_password(password):
    user = get_user_model()(username="boss", email="boss@example.jp")

    with pytest.raises(ValidationError):
        validate_password(password, user)

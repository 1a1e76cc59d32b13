"""Production settings refuse to start without real keys."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

CHECK = [sys.executable, "-c", "import automedia_site.settings"]


def run_settings(**env) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "FIELD_ENCRYPTION_KEY", "DEBUG")
    }
    return subprocess.run(CHECK, env={**base, **env}, capture_output=True, text=True, cwd=settings.BASE_DIR)


def test_it_refuses_to_start_without_a_secret_key_in_production():
    result = run_settings(DEBUG="0")

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_it_refuses_to_start_without_an_encryption_key_in_production():
    result = run_settings(DEBUG="0", DJANGO_SECRET_KEY="x" * 50)

    assert result.returncode != 0
    assert "FIELD_ENCRYPTION_KEY" in result.stderr


def test_it_starts_with_real_keys():
    result = run_settings(
        DEBUG="0",
        DJANGO_SECRET_KEY="x" * 50,
        FIELD_ENCRYPTION_KEY="mRVbT8xV0h9dmt4Yp0rZx3lYZk1m3vLzT2b8oN5Q1Ww=",
    )

    assert result.returncode == 0, result.stderr


def test_it_uses_tokyo_time_and_japanese():
    assert (settings.TIME_ZONE, settings.USE_TZ, settings.LANGUAGE_CODE) == ("Asia/Tokyo", True, "ja")


def test_it_refuses_an_encryption_key_that_is_not_a_fernet_key():
    result = run_settings(DEBUG="0", DJANGO_SECRET_KEY="x" * 50, FIELD_ENCRYPTION_KEY="too-short")

    assert result.returncode != 0
    assert "not a valid Fernet key" in result.stderr


def test_it_refuses_a_narrowcast_threshold_under_lines_minimum_of_50():
    refused = run_settings(DEBUG="1", LINE_NARROWCAST_MIN_RECIPIENTS="49")
    accepted = run_settings(DEBUG="1", LINE_NARROWCAST_MIN_RECIPIENTS="50")

    assert refused.returncode != 0 and "LINE_NARROWCAST_MIN_RECIPIENTS" in refused.stderr
    assert accepted.returncode == 0, accepted.stderr


def test_the_backlog_key_goes_as_the_documented_parameter_unless_set_to_its_header():
    shown = [sys.executable, "-c", "from automedia_site import settings; print(settings.BACKLOG_API_KEY_IN)"]
    base = {k: v for k, v in os.environ.items() if k != "BACKLOG_API_KEY_IN"} | {"DEBUG": "1"}

    def key_in(**env) -> subprocess.CompletedProcess:
        return subprocess.run(shown, env=base | env, capture_output=True, text=True, cwd=settings.BASE_DIR)

    assert key_in().stdout.split()[-1] == "query"
    assert key_in(BACKLOG_API_KEY_IN="header").stdout.split()[-1] == "header"
    refused = key_in(BACKLOG_API_KEY_IN="x-api-key")
    assert refused.returncode != 0 and "BACKLOG_API_KEY_IN must be header or query" in refused.stderr

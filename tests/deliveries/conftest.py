"""The channel tests' settings; their fixtures are in tests/conftest.py, their helpers in
tests/helpers/channels.py."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _platform_settings(settings):
    settings.PLATFORM_TIMEOUT_SECONDS = 0.5  # a fake's delay fault waits longer than this
    settings.TIKTOK_CLIENT_KEY = "sandbox-client-key"
    settings.TIKTOK_CLIENT_SECRET = "sandbox-client-secret"

"""The channel tests' settings; their fixtures are the plugin tests/channel_fixtures.py."""

from __future__ import annotations

import pytest

from tests.channel_fixtures import (  # noqa: F401 - imported by the test modules from here
    APPROVED_AT,
    HS_TOKEN,
    IG_TOKEN,
    TEMPLATES,
    TT_REFRESH,
    TT_TOKEN,
    VARIABLES,
    channel_body,
    channel_template,
)


@pytest.fixture(autouse=True)
def _platform_settings(settings):
    settings.PLATFORM_TIMEOUT_SECONDS = 0.5  # a fake's delay fault waits longer than this
    settings.TIKTOK_CLIENT_KEY = "sandbox-client-key"
    settings.TIKTOK_CLIENT_SECRET = "sandbox-client-secret"

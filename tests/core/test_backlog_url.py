"""Where a tenant's Backlog API key may go (core.backlog_url)."""

from __future__ import annotations

import pytest

from core.backlog_url import base_url_problem


@pytest.mark.parametrize(
    "url", ["https://acme.backlog.jp", "https://acme.backlog.com/", "https://my-space1.backlogtool.com"]
)
def test_it_accepts_each_backlog_domain(url):
    assert base_url_problem(url) == ""


def test_it_accepts_another_host_only_when_the_settings_list_it(settings):
    settings.BACKLOG_ALLOWED_HOSTS = []
    refused = base_url_problem("http://127.0.0.1:8081")
    settings.BACKLOG_ALLOWED_HOSTS = ["127.0.0.1"]

    assert refused and base_url_problem("http://127.0.0.1:8081") == ""

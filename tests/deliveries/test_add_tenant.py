"""`manage.py add_tenant`: create, update, JSON output and every rejected input."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from core.models import Tenant

REQUIRED = [
    "--backlog-url",
    "https://acme.backlog.jp",
    "--backlog-api-key",
    "key-1234567890",
    "--backlog-project",
    "ACME",
]


def run(*args) -> str:
    """add_tenant without its connection check (tests/deliveries/test_add_tenant_checks.py)."""
    out = StringIO()
    call_command("add_tenant", *args, "--no-check", stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_it_creates_a_tenant_and_prints_its_webhook_urls_as_json():
    out = json.loads(
        run(
            "acme",
            *REQUIRED,
            "--operators",
            "user:manager, id:1001",
            "--json",
            "--base-url",
            "https://automedia.example.jp/",
        )
    )

    tenant = Tenant.objects.get(slug="acme")
    assert out["slug"] == "acme" and out["created"] is True
    assert (
        out["backlog_webhook_url"]
        == f"https://automedia.example.jp/hooks/backlog/acme/{tenant.webhook_token}"
    )
    assert out["line_webhook_url"] == "https://automedia.example.jp/hooks/line/acme"
    assert tenant.operators == ["user:manager", "id:1001"]
    assert tenant.backlog_api_key == "key-1234567890"


@pytest.mark.django_db
def test_it_defaults_the_base_url_to_the_local_server():
    out = json.loads(run("acme", *REQUIRED, "--json"))

    assert out["backlog_webhook_url"].startswith("http://127.0.0.1:8000/hooks/backlog/acme/")


@pytest.mark.django_db
def test_it_updates_an_existing_tenant_and_keeps_its_webhook_token():
    run("acme", *REQUIRED)
    token = Tenant.objects.get().webhook_token

    out = json.loads(
        run("acme", "--line-channel-token", "line-token", "--publish-time-policy", "reschedule", "--json")
    )

    tenant = Tenant.objects.get()
    assert out["created"] is False
    assert (tenant.webhook_token, tenant.line_channel_token, tenant.publish_time_policy) == (
        token,
        "line-token",
        "reschedule",
    )


@pytest.mark.django_db
def test_it_rotates_the_webhook_token_on_request():
    run("acme", *REQUIRED)
    token = Tenant.objects.get().webhook_token

    run("acme", "--rotate-webhook-token")

    assert Tenant.objects.get().webhook_token != token


@pytest.mark.django_db
def test_it_imports_quiet_hours_from_a_project_yml(tmp_path):
    yml = tmp_path / "project.yml"
    yml.write_text(
        'quiet_hours:\n  enabled: true\n  timezone: Asia/Tokyo\n  ranges:\n    - { from: "22:00", to: "08:00" }\n  mode: defer\n',
        encoding="utf-8",
    )

    run("acme", *REQUIRED, "--quiet-hours-file", str(yml))

    config = Tenant.objects.get().quiet_hours_config()
    assert (config.enabled, config.mode, len(config.ranges)) == (True, "defer", 1)


@pytest.mark.django_db
def test_it_rejects_invalid_quiet_hours_naming_the_problem(tmp_path):
    yml = tmp_path / "project.yml"
    yml.write_text(
        'quiet_hours:\n  enabled: true\n  timezone: Mars/Olympus\n  ranges:\n    - { from: "25:00", to: "08:00" }\n',
        encoding="utf-8",
    )

    with pytest.raises(CommandError) as caught:
        run("acme", *REQUIRED, "--quiet-hours-file", str(yml))

    assert "Mars/Olympus" in str(caught.value) and "25:00" in str(caught.value)
    assert not Tenant.objects.exists()


@pytest.mark.django_db
def test_it_refuses_an_operator_that_does_not_say_whether_it_is_an_id_or_a_user_id():
    with pytest.raises(CommandError, match="「1001」は使えません"):
        run("acme", *REQUIRED, "--operators", "user:manager,1001")

    assert not Tenant.objects.exists()


@pytest.mark.django_db
def test_it_requires_the_backlog_settings_for_a_new_tenant():
    with pytest.raises(CommandError, match="--backlog-api-key"):
        run("acme", "--backlog-url", "https://acme.backlog.jp", "--backlog-project", "ACME")


@pytest.mark.django_db
def test_it_rejects_a_backlog_url_that_is_not_a_url():
    with pytest.raises(CommandError, match="not a URL"):
        run("acme", "--backlog-url", "acme backlog", "--backlog-api-key", "k", "--backlog-project", "ACME")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/", "https://acme.backlog.jp.evil.com", "http://127.0.0.2"]
)
def test_it_rejects_a_backlog_url_that_is_no_backlog_space(url):
    with pytest.raises(CommandError, match="BACKLOG_ALLOWED_HOSTS"):
        run("acme", "--backlog-url", url, "--backlog-api-key", "k", "--backlog-project", "ACME")

    assert not Tenant.objects.exists()


@pytest.mark.django_db
def test_it_accepts_a_host_listed_in_the_settings(settings):
    settings.BACKLOG_ALLOWED_HOSTS = ["backlog.internal"]

    run(
        "acme",
        "--backlog-url",
        "http://backlog.internal:8081",
        "--backlog-api-key",
        "k",
        "--backlog-project",
        "A",
    )

    assert Tenant.objects.get().backlog_base_url == "http://backlog.internal:8081"


@pytest.mark.django_db
def test_it_stores_secrets_encrypted_at_rest():
    run(
        "acme",
        *REQUIRED,
        "--line-channel-token",
        "line-token-plain",
        "--line-channel-secret",
        "line-secret-plain",
    )

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT backlog_api_key, line_channel_token, line_channel_secret, webhook_token FROM deliveries_tenant"
        )
        stored = cursor.fetchone()
    assert not any(
        plain in " ".join(stored) for plain in ("key-1234567890", "line-token-plain", "line-secret-plain")
    )
    assert all(value.startswith("gAAAA") for value in stored)  # Fernet tokens


@pytest.mark.django_db
def test_it_never_prints_secrets():
    out = run("acme", *REQUIRED, "--line-channel-token", "line-token-plain")

    assert "key-1234567890" not in out and "line-token-plain" not in out

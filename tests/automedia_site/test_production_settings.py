"""Production settings (DEBUG off): HTTPS on by default, each part switched by its own
variable; `manage.py check --deploy` finds nothing that is not a documented exception."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import Client

from tests.helpers.backlog import load_fixture, post, webhook_url

SECURITY = (
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER",
)
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "automedia_site.settings",
    "DEBUG": "0",
    "DJANGO_SECRET_KEY": "production-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
    "FIELD_ENCRYPTION_KEY": "mRVbT8xV0h9dmt4Yp0rZx3lYZk1m3vLzT2b8oN5Q1Ww=",
    "ALLOWED_HOSTS": "automedia.example.jp",
}
PRINT = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    f"print(json.dumps({{name: getattr(s, name) for name in {[*SECURITY, 'X_FRAME_OPTIONS']!r}}}))"
)
PRINT_SESSION = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.ALLOWED_HOSTS, s.SESSION_COOKIE_AGE, "
    "[v['NAME'].rsplit('.', 1)[1] for v in s.AUTH_PASSWORD_VALIDATORS]]))"
)


def run(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in (*SECURITY, *PRODUCTION)}
    return subprocess.run(
        argv, env={**base, **PRODUCTION, **env}, capture_output=True, text=True, cwd=settings.BASE_DIR
    )


def production_settings(**env: str) -> dict:
    result = run([sys.executable, "-c", PRINT], **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_it_turns_https_on_by_default_when_debug_is_off():
    assert production_settings() == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,  # Django's W016 misses it: the CSRF middleware is a subclass
        "SECURE_PROXY_SSL_HEADER": None,
        "X_FRAME_OPTIONS": "DENY",  # likewise W019
    }


def test_each_part_is_switched_by_the_variable_of_its_own_name():
    assert production_settings(
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="3600",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
    ) == {
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 3600,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "X_FRAME_OPTIONS": "DENY",
    }


def test_it_refuses_a_proxy_header_it_cannot_read():
    result = run([sys.executable, "-c", "import automedia_site.settings"], SECURE_PROXY_SSL_HEADER="https")

    assert result.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER must be" in result.stderr


def test_check_deploy_finds_nothing_with_production_settings():
    result = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"])

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (3 silenced)." in result.stdout


@pytest.fixture
def https_settings(settings):
    """The production HTTPS settings in this process (test_settings turns them off)."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return settings


@pytest.mark.django_db
def test_behind_the_redirect_probes_answer_over_http_and_browsers_are_sent_to_https(https_settings):
    client = Client()  # a new client: SecurityMiddleware reads the settings when it is built

    assert client.get("/healthz").status_code in (200, 503)  # the state, not a redirect
    assert client.get("/metrics").status_code == 403  # over HTTP, refused without METRICS_TOKEN
    admin = client.get("/admin/")
    assert (admin.status_code, admin["Location"]) == (301, "https://testserver/admin/")
    secure = client.get("/admin/login/", HTTP_X_FORWARDED_PROTO="https")  # via the TLS proxy
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_webhooks_work_through_the_tls_proxy_behind_the_redirect(https_settings, tenant):
    client = Client()
    payload = load_fixture("backlog/issue_updated.json")

    assert post(client, webhook_url(tenant), payload).status_code == 301  # plain HTTP: never accepted
    response = post(client, webhook_url(tenant), payload, HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200, response.content


def session_settings(**env: str) -> list:
    base = {k: v for k, v in os.environ.items() if k not in (*SECURITY, *PRODUCTION, "ALLOWED_HOSTS")}
    result = subprocess.run(
        [sys.executable, "-c", PRINT_SESSION],
        env={**base, **{k: v for k, v in PRODUCTION.items() if k != "ALLOWED_HOSTS"}, **env},
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_production_hosts_sessions_and_passwords_by_default():
    hosts, age, validators = session_settings()

    assert "testserver" not in hosts
    assert age == 8 * 60 * 60  # 8 hours idle (automedia_site/middleware.py saves it again)
    assert validators == [
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    ]


def test_the_session_idle_timeout_is_a_setting():
    assert session_settings(SESSION_IDLE_TIMEOUT_SECONDS="1800")[1] == 1800


PRINT_CLIENTS = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.CACHES['default']['BACKEND'].rsplit('.', 1)[1], "
    "getattr(s, 'AXES_IPWARE_PROXY_COUNT', None), getattr(s, 'AXES_IPWARE_META_PRECEDENCE_ORDER', None), "
    "getattr(s, 'IPWARE_STRICT', None)]))"
)


def client_settings(**env: str) -> list:
    base = {"CACHE_URL": "", "REDIS_URL": "", "AXES_IPWARE_PROXY_COUNT": ""}
    result = run([sys.executable, "-c", PRINT_CLIENTS], **{**base, **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_production_counts_throttles_in_a_shared_cache():
    assert client_settings()[0] == "DatabaseCache"  # its table made by migrate
    assert client_settings(REDIS_URL="redis://127.0.0.1:6379/0")[0] == "RedisCache"
    assert client_settings(CACHE_URL="locmemcache://")[0] == "LocMemCache"  # the operator's choice
    assert client_settings(DEBUG="1")[0] == "LocMemCache"


def test_x_forwarded_for_is_read_only_behind_a_counted_proxy():
    assert client_settings()[1:] == [None, ["REMOTE_ADDR"], None]  # django-axes' own defaults
    assert client_settings(AXES_IPWARE_PROXY_COUNT="0")[1:] == [
        0,
        ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"],
        False,
    ]
    refused = run([sys.executable, "-c", PRINT_CLIENTS], AXES_IPWARE_PROXY_COUNT="-1")
    assert refused.returncode != 0 and "AXES_IPWARE_PROXY_COUNT must be 0 or more" in refused.stderr


@pytest.mark.django_db
def test_migrate_makes_the_database_caches_table(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "automedia_cache_t"}
    }

    call_command("migrate", "--noinput", verbosity=0)

    assert "automedia_cache_t" in connection.introspection.table_names()

"""Settings for the test suite: the production settings plus test-only fixed values."""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-secret-key-not-for-production-0123456789abcdef")
# A fixed, valid Fernet key so encrypted fixtures are reproducible.
os.environ.setdefault("FIELD_ENCRYPTION_KEY", "mRVbT8xV0h9dmt4Yp0rZx3lYZk1m3vLzT2b8oN5Q1Ww=")

from automedia_site.settings import *  # noqa: E402,F403

Q_CLUSTER = {**Q_CLUSTER, "sync": True}  # noqa: F405 - async_task runs inline in unit tests
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
BACKLOG_EVENT_BATCH_SECONDS = 0.0  # every webhook enqueues its drain (runs inline: sync)
LOGGING = {**LOGGING, "loggers": {**LOGGING["loggers"], "django-q": {"level": "WARNING"}}}  # noqa: F405
ADMINS = [("運用担当", "ops@example.jp")]
LINE_TIMEOUT_SECONDS = 1.0  # the fake LINE timeout fault waits longer than this
# No test reaches the real LINE: approvals and previews ask LINE (validate, quota), and a
# test without the fake LINE (the `line` fixture) or respx gets a refused connection at once.
LINE_API_BASE_URL = "http://127.0.0.1:9"
BACKLOG_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]  # the fake Backlog of tests/conftest.py
# The test client and the live server of the browser tests speak plain HTTP; the
# production values are checked by tests/automedia_site/test_production_settings.py.
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
# Each test starts from an empty cache (tests/conftest.py clears it): one in the process.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

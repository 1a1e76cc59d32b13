"""Settings for automedia, read from the environment (django-environ).

Every variable is listed, with a comment, in `.env.example`.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import timedelta
from pathlib import Path

import environ
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from automedia_site import content_security
from automedia_site.database import caches, database
from automedia_site.logconfig import logging_config
from automedia_site.workers import delivery_workers, host_cores

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEV_SECRET_KEY = "automedia-insecure-development-key"  # noqa: S105 - refused outside DEBUG

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=DEV_SECRET_KEY)
if not DEBUG and (SECRET_KEY == DEV_SECRET_KEY or len(SECRET_KEY) < 32):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY must be set to a random value of at least 32 characters "
        "when DEBUG is off (production settings refuse the development key)."
    )

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# HTTPS: on by default when DEBUG is off, each switched by the variable of its own name.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Load balancer and Prometheus probes often reach the process over plain HTTP inside the
# network: /healthz and /metrics answer there instead of redirecting (/metrics has its token).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
# automedia is served from a host of its own (automedia.example.jp): includeSubDomains
# covers only names below that host, which automedia never serves over plain HTTP.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)


def _proxy_ssl_header() -> tuple[str, str] | None:
    """`HTTP_X_FORWARDED_PROTO,https` behind a TLS-terminating proxy that sets the header
    (and strips it from clients); unset when the process itself speaks TLS or no proxy."""
    value = env.str("SECURE_PROXY_SSL_HEADER", default="")
    if not value:
        return None
    header, _, proto = (part.strip() for part in value.partition(","))
    if not header.startswith("HTTP_") or not proto:
        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must be `HTTP_<HEADER>,<value>`, e.g. HTTP_X_FORWARDED_PROTO,https"
        )
    return header, proto


SECURE_PROXY_SSL_HEADER = _proxy_ssl_header()


def _field_encryption_key() -> str:
    key = env.str("FIELD_ENCRYPTION_KEY", default="")
    if key:
        try:
            Fernet(key.encode())
        except ValueError as exc:
            raise ImproperlyConfigured("FIELD_ENCRYPTION_KEY is not a valid Fernet key") from exc
        return key
    if not DEBUG:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEY must be set when DEBUG is off (generate one with "
            "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`)."
        )
    # Development only: a stable key derived from the (development) secret key.
    return base64.urlsafe_b64encode(hashlib.sha256(SECRET_KEY.encode()).digest()).decode()


FIELD_ENCRYPTION_KEY = _field_encryption_key()

INSTALLED_APPS = [
    "console.apps.AutomediaAdminConfig",  # django.contrib.admin with the dashboard site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "automedia_site.apps.AxesConfig",  # django-axes: admin login lockout
    "core",  # the lowest layer: tenancy, access scoping, crypto, time
    "automedia_site",
    "line",  # LINE, the platform: below deliveries, which its channel adapter sends through
    "deliveries",
    "linepush",
    "backlog_bridge",
    "console",
]

# Django's middleware; the browser-only ones (automedia_site.middleware) let /hooks/ requests through.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "automedia_site.middleware.CSPMiddleware",  # CONTENT_SECURITY_POLICY (django-csp)
    "automedia_site.middleware.SessionMiddleware",
    "automedia_site.middleware.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "automedia_site.middleware.CsrfViewMiddleware",
    "automedia_site.middleware.AuthenticationMiddleware",
    "automedia_site.middleware.MessageMiddleware",
    "automedia_site.middleware.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it only turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]
# Django's checks look for their middleware by exact name and miss the subclasses above
# (installed; they skip /hooks/ only). CSRF_COOKIE_SECURE and X_FRAME_OPTIONS, which
# those checks would then also check, are asserted by tests/automedia_site/test_production_settings.py.
SILENCED_SYSTEM_CHECKS = [
    "security.W002",  # XFrameOptionsMiddleware: automedia_site.middleware's subclass is installed
    "security.W003",  # CsrfViewMiddleware: automedia_site.middleware's subclass is installed
    # HSTS preload is a commitment for the whole registrable domain (hstspreload.org), the
    # operator's decision, not automedia's default.
    "security.W021",
]

CONTENT_SECURITY_POLICY = content_security.POLICY

# Admin logins: django-axes locks a (username, IP address) pair out after
# AXES_FAILURE_LIMIT failed attempts, for AXES_COOLOFF_HOURS. A successful login resets
# the count. Attempts are rows (superusers see them in the admin); `manage.py axes_reset` unlocks.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out pair before any password check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(hours=env.float("AXES_COOLOFF_HOURS", default=1.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Behind proxies the client's address is in X-Forwarded-For (django-ipware, for django-axes and
# the API's failed-token throttle). Unset: only REMOTE_ADDR counts (a client can write the header).
# Set: how many proxy addresses follow the client's in it (ipware's count): 0 behind one proxy
# that appends it (nginx `$proxy_add_x_forwarded_for`), 1 behind a load balancer and nginx.
if env.str("AXES_IPWARE_PROXY_COUNT", default="") != "":
    AXES_IPWARE_PROXY_COUNT = env.int("AXES_IPWARE_PROXY_COUNT")
    if AXES_IPWARE_PROXY_COUNT < 0:
        raise ImproperlyConfigured("AXES_IPWARE_PROXY_COUNT must be 0 or more")
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    # The address that many entries from the header's right end, whatever a client forged in front
    # (strict, ipware's default, would take the proxy's own address from a longer header).
    IPWARE_STRICT = False
AXES_COOLOFF_MESSAGE = _(
    "ログインの失敗が続いたため、しばらくログインできません。時間をおいてもう一度お試しください。"
)

ROOT_URLCONF = "automedia_site.urls"
WSGI_APPLICATION = "automedia_site.wsgi.application"
ASGI_APPLICATION = "automedia_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The database (SQLite by default, PostgreSQL's connection pool): automedia_site/database.py.
DATABASE_POOL_MAX_SIZE = env.int("DATABASE_POOL_MAX_SIZE", default=3)
_processes = {"web": 1, "worker": 1, "deliverer": 1, "scheduler": 1}
DATABASE_PROCESSES = {k: int(n) for k, n in env.dict("DATABASE_PROCESSES", default=_processes).items()}
_deliverer_share = delivery_workers(deliverers=DATABASE_PROCESSES.get("deliverer", 1), cores=host_cores())
DATABASES = {"default": database(env, BASE_DIR, pool_max_size=DATABASE_POOL_MAX_SIZE)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_PW = "UserAttributeSimilarity MinimumLength CommonPassword NumericPassword".split()  # Django's four
AUTH_PASSWORD_VALIDATORS = [{"NAME": f"django.contrib.auth.password_validation.{n}Validator"} for n in _PW]
SESSION_COOKIE_AGE = env.int("SESSION_IDLE_TIMEOUT_SECONDS", default=8 * 60 * 60)

LANGUAGE_CODE = "ja"
# Japanese by default; English when the browser asks for it (LocaleMiddleware).
LANGUAGES = [("ja", "日本語"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "Asia/Tokyo"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

REDIS_URL = env.str("REDIS_URL", default="")
Q_CLUSTER = {
    "name": "automedia",
    "workers": env.int("Q_WORKERS", default=2),
    "timeout": 300,
    "retry": 360,
    "max_attempts": 1,  # retries are automedia's own (new due times), never the broker's
    "catch_up": False,
    "ack_failures": True,
    "label": "タスクキュー（django-q2）",
    "sync": env.bool("Q_SYNC", default=False),
    # Deliveries have their own queue and workers (`Q_CLUSTER_NAME=deliveries manage.py
    # qcluster`), so a burst of webhook processing never delays a due delivery.
    # save_limit -1: a successful task there leaves no django_q Success row (its outcome has rows
    # of its own); the default (250) read and pruned up to 250 pickled rows after every task.
    # bulk: the tasks its pusher takes from the ORM broker at once (core/orm_broker.py; not Redis).
    "ALT_CLUSTERS": {
        "deliveries": {
            "workers": env.int("DELIVERY_WORKERS", default=_deliverer_share),  # automedia_site/workers.py
            "save_limit": -1,
            "bulk": env.int("DELIVERY_BULK", default=4),
        }
    },
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    Q_CLUSTER["broker_class"] = "core.orm_broker.ClaimingRedis"  # django-q2's, its claims held
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "core.orm_broker.BulkORM"
    # How long a qcluster's pusher sleeps when it finds the ORM broker's queue empty (Redis
    # wakes it at once; with the ORM broker the enqueue's commit does: a NOTIFY on PostgreSQL,
    # a wake file beside the database on SQLite, core/orm_broker.py): the longest a task
    # queued just then waits when that wake is missed.
    Q_CLUSTER["poll"] = env.float("Q_POLL_SECONDS", default=0.2)

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "automedia API",
    "DESCRIPTION": "LINE グループ投稿のキュー（POST /api/linepush/items/）。認証はテナントごとの Bearer トークン。",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "PREPROCESSING_HOOKS": ["linepush.schema.public_api_only"],
}

# Outbound services: every base URL is a setting so the same code talks to a fake.
# The engine of every outbound call (core/http.py): "curl" (default) or "httpx" (seen by respx).
OUTBOUND_HTTP_CLIENT = env.str("OUTBOUND_HTTP_CLIENT", default="curl")
if OUTBOUND_HTTP_CLIENT not in ("curl", "httpx"):
    raise ImproperlyConfigured(f"OUTBOUND_HTTP_CLIENT must be curl or httpx, not {OUTBOUND_HTTP_CLIENT!r}")
LINE_API_BASE_URL = env.str("LINE_API_BASE_URL", default="https://api.line.me")
LINE_TIMEOUT_SECONDS = env.float("LINE_TIMEOUT_SECONDS", default=10.0)
# Refuse a push body over 2 MB before sending: only third parties' copies of LINE's docs say so.
LINE_REFUSE_OVER_2MB = env.bool("LINE_REFUSE_OVER_2MB", default=False)
# A tag of at least this many followers goes by narrowcast (0: never); LINE fails one to <50.
LINE_NARROWCAST_MIN_RECIPIENTS = env.int("LINE_NARROWCAST_MIN_RECIPIENTS", default=0)
if LINE_NARROWCAST_MIN_RECIPIENTS and LINE_NARROWCAST_MIN_RECIPIENTS < 50:
    raise ImproperlyConfigured("LINE_NARROWCAST_MIN_RECIPIENTS must be 0 (off) or at least 50")
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_MODEL = env.str("ANTHROPIC_MODEL", default="claude-sonnet-5")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="https://api.anthropic.com")
AI_REVIEW_TIMEOUT_SECONDS = env.float("AI_REVIEW_TIMEOUT_SECONDS", default=20.0)
BACKLOG_TIMEOUT_SECONDS = env.float("BACKLOG_TIMEOUT_SECONDS", default=10.0)
# A tenant's Backlog URL must be https://{space}.backlog.jp|backlog.com|backlogtool.com;
# any other host (the sandbox's fake Backlog on loopback) must be listed here, or the
# tenant's API key is never sent to it.
BACKLOG_ALLOWED_HOSTS = env.list("BACKLOG_ALLOWED_HOSTS", default=[])
# Where the Backlog API key travels: "query", the documented `apiKey` parameter
# (https://developer.nulab.com/docs/backlog/auth), or "header", `Backlog-API-Key` (python-backlog's
# name, https://pypi.org/project/python-backlog/0.18.0/; Backlog's own pages name no header).
BACKLOG_API_KEY_IN = env.str("BACKLOG_API_KEY_IN", default="query")
if BACKLOG_API_KEY_IN not in ("header", "query"):
    raise ImproperlyConfigured("BACKLOG_API_KEY_IN must be header or query")
# Instagram (Instagram Login: graph.instagram.com; the version is pinned), TikTok Content
# Posting API, HubSpot. One timeout for the three; TikTok's app credentials refresh tokens.
INSTAGRAM_GRAPH_BASE_URL = env.str("INSTAGRAM_GRAPH_BASE_URL", default="https://graph.instagram.com")
INSTAGRAM_GRAPH_API_VERSION = env.str("INSTAGRAM_GRAPH_API_VERSION", default="v25.0")
INSTAGRAM_TOKEN_REFRESH_DAYS = env.int("INSTAGRAM_TOKEN_REFRESH_DAYS", default=10)
TIKTOK_API_BASE_URL = env.str("TIKTOK_API_BASE_URL", default="https://open.tiktokapis.com")
TIKTOK_CLIENT_KEY = env.str("TIKTOK_CLIENT_KEY", default="")
TIKTOK_CLIENT_SECRET = env.str("TIKTOK_CLIENT_SECRET", default="")
# Refuse branded content posted SELF_ONLY at approval: only third parties say TikTok refuses it.
TIKTOK_REFUSE_PRIVATE_BRANDED = env.bool("TIKTOK_REFUSE_PRIVATE_BRANDED", default=False)
HUBSPOT_API_BASE_URL = env.str("HUBSPOT_API_BASE_URL", default="https://api.hubapi.com")
PLATFORM_TIMEOUT_SECONDS = env.float("PLATFORM_TIMEOUT_SECONDS", default=15.0)
BACKLOG_METADATA_TTL_SECONDS = env.int("BACKLOG_METADATA_TTL_SECONDS", default=300)

# Invalidate revert target (seed 001): NAME, resolved per project; else ID.
INVALIDATE_REVERT_STATUS_NAME = env.str("INVALIDATE_REVERT_STATUS_NAME", default="")
INVALIDATE_REVERT_STATUS_ID = env.int("INVALIDATE_REVERT_STATUS_ID", default=None)

BACKLOG_WEBHOOK_MAX_BYTES = 1024 * 1024
# A web process enqueues at most one drain task (which takes every pending webhook
# event) per this many seconds: a burst of webhooks writes event rows, not task rows.
BACKLOG_EVENT_BATCH_SECONDS = env.float("BACKLOG_EVENT_BATCH_SECONDS", default=0.2)
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000")

ADMINS = [tuple(a.split(":", 1)) for a in env.list("ADMINS", default=[]) if ":" in a]
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="automedia@localhost")

# Error reports (ADMINS' mails, DEBUG's 500 page) mask the Backlog webhook token.
DEFAULT_EXCEPTION_REPORTER = "automedia_site.reporting.MaskingExceptionReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "automedia_site.reporting.SecretsExceptionReporterFilter"

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = logging_config(level=LOG_LEVEL, q_level=env.str("DJANGO_Q_LOG_LEVEL", default="WARNING"))

# The sandbox of `make run`: fake Backlog (and later fake LINE) on loopback.
SANDBOX_BACKLOG_URL = env.str("SANDBOX_BACKLOG_URL", default="http://127.0.0.1:8081")
SANDBOX_LINE_URL = env.str("SANDBOX_LINE_URL", default="http://127.0.0.1:8082")
SANDBOX_INSTAGRAM_URL = env.str("SANDBOX_INSTAGRAM_URL", default="http://127.0.0.1:8083")
SANDBOX_TIKTOK_URL = env.str("SANDBOX_TIKTOK_URL", default="http://127.0.0.1:8084")
SANDBOX_HUBSPOT_URL = env.str("SANDBOX_HUBSPOT_URL", default="http://127.0.0.1:8085")

# Delivery engine: a claim's lease (renewed by a live worker every third of it, so a dead
# worker's schedule is due again within it; core/keeper.py), the scheduler's longest sleep.
DELIVERY_LEASE_SECONDS = env.int("DELIVERY_LEASE_SECONDS", default=5)
SCHEDULER_POLL_SECONDS = env.float("SCHEDULER_POLL_SECONDS", default=0.5)
# The sleep instead while due rows wait only for room under a queue's cap.
SCHEDULER_HELD_POLL_SECONDS = env.float("SCHEDULER_HELD_POLL_SECONDS", default=0.05)
# Rows run_scheduler claims per pass and queue (its --batch): a pass costs a dozen queries
# whatever its size, so a burst or a drain takes few passes.
SCHEDULER_BATCH = env.int("SCHEDULER_BATCH", default=200)
# run_scheduler's pass runs each of these queues' steps, in this order (deliveries/scheduler_steps.py).
SCHEDULER_STEPS = [
    "deliveries.publish.scheduler.schedules_step",  # due deliveries
    "deliveries.writeback.queue.writebacks_step",  # due Backlog write-backs
    "deliveries.prepare.ahead.prepare_step",  # the reads ahead of a send's second
    "backlog_bridge.events.events_stranded_step",  # Backlog webhook events no worker took
    "line.events.line_events_stranded_step",  # LINE webhook events no worker took
    "linepush.push.push_step",  # due LINE group posts
]
# The most claimed rows one `deliver_batch` task runs: a pass's rows are spread evenly over the
# deliverers' workers up to this many each, and a task's own cost is paid once for its rows.
DELIVERY_TASK_SIZE = env.int("DELIVERY_TASK_SIZE", default=50)
# Preparing a send (deliveries/prepare/ahead.py): from this many seconds before it is due, and the
# oldest issue read a send relies on (read again shortly before the second).
DELIVERY_PREPARE_SECONDS = env.int("DELIVERY_PREPARE_SECONDS", default=30)
DELIVERY_RECHECK_SECONDS = env.float("DELIVERY_RECHECK_SECONDS", default=3.0)
# run_scheduler's Backlog readers: a tenant's reads in series, this many tenants at once.
PREPARE_THREADS = env.int("PREPARE_THREADS", default=4)
# A tenant's write-backs per task, in series on the default queue (deliveries/writeback/queue.py).
WRITEBACK_BATCH = env.int("WRITEBACK_BATCH", default=20)
HEALTH_HEARTBEAT_MAX_AGE = env.int("HEALTH_HEARTBEAT_MAX_AGE", default=30)
HEALTH_OVERDUE_MAX_SECONDS = env.int("HEALTH_OVERDUE_MAX_SECONDS", default=60)
# /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, 403 unless DEBUG or METRICS_PUBLIC.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_PUBLIC = env.bool("METRICS_PUBLIC", default=False)

# LINE group posts (linepush): a queued post's claim lease, posts per worker task, the most
# under lease at once, when an automediaエラー task is escalated (retries: core/retry.py).
LINEPUSH_LEASE_SECONDS = env.int("LINEPUSH_LEASE_SECONDS", default=5)
LINEPUSH_BATCH_SIZE = env.int("LINEPUSH_BATCH_SIZE", default=100)
LINEPUSH_MAX_IN_FLIGHT = env.int("LINEPUSH_MAX_IN_FLIGHT", default=500)
LINEPUSH_SEND_LANES = env.int("LINEPUSH_SEND_LANES", default=8)  # 100 / 8: ~12 pushes a lane
LINEPUSH_ESCALATION_AFTER_HOURS = env.int("LINEPUSH_ESCALATION_AFTER_HOURS", default=24)
LINEPUSH_API_THROTTLE_RATE = env.str("LINEPUSH_API_THROTTLE_RATE", default="60/min")
LINEPUSH_API_AUTH_FAILURE_RATE = env.str("LINEPUSH_API_AUTH_FAILURE_RATE", default="10/min")
CACHE_TABLE = "automedia_cache"
CACHES = caches(env, debug=DEBUG, redis_url=REDIS_URL, table=CACHE_TABLE)  # shared: see caches()
LINE_WEBHOOK_MAX_BYTES = 1024 * 1024
# The events of one LINE webhook body stored at most; the others are answered `not_stored`.
LINE_WEBHOOK_MAX_EVENTS = env.int("LINE_WEBHOOK_MAX_EVENTS", default=100)
if LINE_WEBHOOK_MAX_EVENTS < 1:
    raise ImproperlyConfigured("LINE_WEBHOOK_MAX_EVENTS must be at least 1")
# The lease of a stored webhook event (Backlog, LINE) a worker is processing, renewed likewise.
EVENT_LEASE_SECONDS = env.int("EVENT_LEASE_SECONDS", default=5)
# The retention policy (core/retention.py, `manage.py prune_records`; what each period
# covers: .env.example, docs/OPERATIONS.md), in batches with a pause that lets deliveries write between.
RETENTION_EVENTS_DAYS = env.int("RETENTION_EVENTS_DAYS", default=30)
RETENTION_AUDIT_DAYS = env.int("RETENTION_AUDIT_DAYS", default=400)
RETENTION_UNFOLLOWED_DAYS = env.int("RETENTION_UNFOLLOWED_DAYS", default=30)
RETENTION_BATCH_SIZE = env.int("RETENTION_BATCH_SIZE", default=500)
RETENTION_BATCH_PAUSE_SECONDS = env.float("RETENTION_BATCH_PAUSE_SECONDS", default=0.05)
if RETENTION_BATCH_PAUSE_SECONDS < 0:
    raise ImproperlyConfigured("RETENTION_BATCH_PAUSE_SECONDS must not be negative")
for _name in (
    *("RETENTION_EVENTS_DAYS", "RETENTION_AUDIT_DAYS", "RETENTION_UNFOLLOWED_DAYS", "RETENTION_BATCH_SIZE"),
    *("SCHEDULER_BATCH", "WRITEBACK_BATCH", "DELIVERY_PREPARE_SECONDS", "DELIVERY_LEASE_SECONDS"),
    *("EVENT_LEASE_SECONDS", "LINEPUSH_LEASE_SECONDS", "LINEPUSH_BATCH_SIZE", "LINEPUSH_MAX_IN_FLIGHT"),
    *("LINEPUSH_SEND_LANES", "PREPARE_THREADS"),
):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be at least 1")
for _name in ("SCHEDULER_POLL_SECONDS", "SCHEDULER_HELD_POLL_SECONDS", "DELIVERY_RECHECK_SECONDS"):
    if globals()[_name] <= 0:  # 0 would make run_scheduler spin
        raise ImproperlyConfigured(f"{_name} must be more than 0")

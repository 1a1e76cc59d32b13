"""The database settings: SQLite shared by several processes, or PostgreSQL through a
connection pool per process (core/db.py says how it is used)."""

from __future__ import annotations

from pathlib import Path

import environ


def database(env: environ.Env, base_dir: Path, *, pool_max_size: int) -> dict:
    """DATABASES["default"] from DATABASE_URL (a SQLite file in `base_dir` by default)."""
    config = env.db("DATABASE_URL", default=f"sqlite:///{base_dir / 'db.sqlite3'}")
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL + a busy timeout let the web server, the worker and the scheduler share the file.
        config.setdefault("OPTIONS", {}).update(
            {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            }
        )
    if config["ENGINE"] == "django.db.backends.postgresql" and pool_max_size > 0:
        # A pool per process, whatever its thread count. A thread waits `timeout` s for a free
        # connection. Django needs CONN_MAX_AGE 0 with a pool; no health check per checkout
        # (the pool drops a connection that comes back broken).
        config.setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": pool_max_size, "timeout": 30}
        config.update(CONN_MAX_AGE=0, CONN_HEALTH_CHECKS=False)
    # Persistent connections otherwise: opening one (and the WAL pragmas on SQLite) costs
    # more than a whole webhook request.
    config.setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    config.setdefault("CONN_HEALTH_CHECKS", True)
    return config


def caches(env: environ.Env, *, debug: bool, redis_url: str, table: str) -> dict:
    """Django's cache holds the API's throttle counts: a limit holds across web processes only
    in a shared cache. CACHE_URL decides when set; otherwise production shares Redis
    (REDIS_URL) or the database (`table`, made by `migrate`), and DEBUG counts in the process."""
    if env.str("CACHE_URL", default=""):
        return {"default": env.cache("CACHE_URL")}
    if debug:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    if redis_url:
        return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    return {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": table}}

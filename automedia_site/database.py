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

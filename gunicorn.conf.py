"""automedia's production web server: `gunicorn automedia_site.wsgi`, run from this directory.

WEB_CONCURRENCY workers (2); threads per worker from GUNICORN_THREADS, or by database:
3 on PostgreSQL (the gthread worker: another thread uses the CPU while a webhook waits for
its commit), sync workers on SQLite (its writes take turns anyway; threads would only queue
on its lock). Its logger masks the Backlog webhook token in the access and error logs.
"""

import os
from pathlib import Path

import environ
from gunicorn import glogging

from automedia_site.logmask import MASK_FILTER

environ.Env.read_env(Path(__file__).resolve().parent / ".env", overwrite=False)  # as the settings do


def default_threads(database_url: str) -> int:
    return 3 if database_url.startswith("postgres") else 1


bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("GUNICORN_THREADS") or default_threads(os.environ.get("DATABASE_URL", "")))
worker_class = "gthread" if threads > 1 else "sync"


class Logger(glogging.Logger):
    """gunicorn's own logger, whose access log (`--access-logfile`) and error log mask the
    Backlog webhook token in every path they print (`/hooks/backlog/acme/****`)."""

    def setup(self, cfg):
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            log.addFilter(MASK_FILTER)


logger_class = Logger

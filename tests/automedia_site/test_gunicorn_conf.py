"""gunicorn.conf.py: the production web server's workers and threads."""

from __future__ import annotations

import runpy

import pytest

from sandbox.stack import ROOT

CONF = str(ROOT / "gunicorn.conf.py")


@pytest.mark.parametrize(
    ("env", "threads", "worker_class"),
    [
        ({"DATABASE_URL": "postgres://db.internal:5432/automedia"}, 3, "gthread"),
        ({"DATABASE_URL": "postgresql://db.internal/automedia"}, 3, "gthread"),
        ({"DATABASE_URL": "sqlite:////srv/automedia/db.sqlite3"}, 1, "sync"),
        ({"DATABASE_URL": "postgres://db/automedia", "GUNICORN_THREADS": "1"}, 1, "sync"),
        ({"DATABASE_URL": "sqlite:////tmp/x.sqlite3", "GUNICORN_THREADS": "4"}, 4, "gthread"),
    ],
)
def test_threads_follow_the_database_unless_set(monkeypatch, env, threads, worker_class):
    monkeypatch.delenv("GUNICORN_THREADS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    conf = runpy.run_path(CONF)

    assert (conf["workers"], conf["threads"], conf["worker_class"]) == (2, threads, worker_class)


def test_port_and_workers_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("PORT", "9000")
    monkeypatch.setenv("WEB_CONCURRENCY", "4")

    conf = runpy.run_path(CONF)

    assert (conf["bind"], conf["workers"]) == ("0.0.0.0:9000", 4)

"""Database connections: each process bounded by its pool whatever its thread count, a
connection given back before an HTTP call, pools never shared across a fork, the check
that adds up what the processes may open."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresWrapper

import core.keeper
from core import db
from core.http import http_client
from sandbox.echo import FakeEcho

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the connection pool is PostgreSQL's (SQLite has none)"
)


def test_it_adds_up_what_the_procfiles_processes_may_open(settings, monkeypatch):
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    monkeypatch.delenv("GUNICORN_THREADS", raising=False)
    settings.DATABASE_POOL_MAX_SIZE = 3

    one_each = db.connections_at_most({"web": 1, "worker": 1, "deliverer": 1, "scheduler": 1})
    scaled = db.connections_at_most({"web": 1, "worker": 1, "deliverer": 4, "scheduler": 2})

    # each qcluster worker: its pool and its claims' holder (core/holders.py); its pusher:
    # its broker's or claims' connection and its own holder
    assert one_each == 6 + (2 * 4 + 4) + (4 * 4 + 4) + 2
    assert scaled == 6 + 12 + 4 * 20 + 2 * 2


def test_a_forked_child_forgets_its_parents_pools_without_closing_them(monkeypatch):
    parent = object()
    monkeypatch.setattr(PostgresWrapper, "_connection_pools", {"default": parent})
    monkeypatch.setattr(db, "_inherited", [])

    db.forget_inherited_pools()

    assert PostgresWrapper._connection_pools == {}
    assert db._inherited == [{"default": parent}]  # kept referenced: never collected, never closed


@postgres_only
@pytest.mark.django_db
def test_the_check_warns_when_the_processes_could_open_more_than_the_server_allows(settings):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('max_connections')::int")
        allowed = cursor.fetchone()[0]
    settings.DATABASE_PROCESSES = {"deliverer": allowed}

    [warning] = db.database_connections()

    assert warning.id == "core.W001" and "max_connections" in warning.hint
    # README's layout on 2 cores: four deliverers of 2 workers each, 70 connections at most
    clusters = {**settings.Q_CLUSTER["ALT_CLUSTERS"], "deliveries": {"workers": 2}}
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "ALT_CLUSTERS": clusters}
    settings.DATABASE_PROCESSES = {"web": 1, "worker": 1, "deliverer": 4, "scheduler": 2}
    assert db.connections_at_most(settings.DATABASE_PROCESSES) == 70
    assert db.database_connections() == []


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_process_holds_no_more_connections_than_its_pool_whatever_its_threads(monkeypatch, settings):
    monkeypatch.setattr(core.keeper, "THREADS", True)
    size = connection.settings_dict["OPTIONS"]["pool"]["max_size"]
    seen, lock = set(), threading.Lock()

    def query(_):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid(), pg_sleep(0.05)")
            pid = cursor.fetchone()[0]
        with lock:
            seen.add(pid)

    core.keeper.in_threads(query, list(range(4 * size)))

    assert 1 <= len(seen) <= size


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_thread_gives_its_pooled_connection_back_before_an_http_call(settings):
    settings.OUTBOUND_HTTP_CLIENT = "curl"
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert connection.connection is not None

    with FakeEcho() as echo:
        client = http_client(base_url=echo.base_url, headers={}, timeout=5)
        assert client.request("GET", "/echo").status_code == 200
        client.close()

    assert connection.connection is None  # back in the pool while the call waited


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite: no pool, a connection is kept")
@pytest.mark.django_db(transaction=True)
def test_without_a_pool_a_thread_keeps_its_connection_across_calls():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    kept = connection.connection

    db.connection_release()

    assert kept is not None and connection.connection is kept

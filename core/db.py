"""Database connections: the bound each process keeps to (psycopg's pool through Django on
PostgreSQL), a connection given back while a thread waits on the network, a pool never
shared across a fork, and the system check that adds up what the processes may open."""

from __future__ import annotations

import os

from django.conf import settings
from django.core.checks import Tags, Warning, register
from django.db import DatabaseError, connection
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresWrapper

# The connections of a qcluster besides its workers': a sentinel and a monitor one each, a
# pusher two (the broker or its claims, and the holder of the claims it takes, core/holders.py);
# run_scheduler and web are one process each.
QCLUSTER_EXTRA_CONNECTIONS = 4
_inherited: list[dict] = []  # pools a forked child must neither use nor close (its parent's)


def pooled() -> bool:
    return bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))


def connection_release() -> None:
    """Give this thread's connection back to the pool before a wait on the network (an HTTP
    call), so the process's few pooled connections serve its many threads. Nothing without
    a pool, and nothing inside a transaction, which must keep its connection."""
    if pooled() and connection.connection is not None and not connection.in_atomic_block:
        connection.close()


def forget_inherited_pools() -> None:
    """In a forked child (django-q2 forks its workers): the parent's pools and their open
    connections are the parent's. The child makes its own pool on its first query; the old
    ones are kept referenced so that collecting them never closes the parent's sockets."""
    if PostgresWrapper._connection_pools:
        _inherited.append(dict(PostgresWrapper._connection_pools))
        PostgresWrapper._connection_pools.clear()


os.register_at_fork(after_in_child=forget_inherited_pools)


def connections_at_most(processes: dict[str, int]) -> int:
    """What the processes may hold together ({kind: how many run}): a process its pool's
    maximum, or fewer when it has fewer threads that query (a qcluster's sentinel and monitor
    one each, its pusher two; run_scheduler its loop and its keeper); a qcluster's worker one
    more, its claims' holder (core/holders.py)."""
    pool = settings.DATABASE_POOL_MAX_SIZE
    web_threads = int(os.environ.get("GUNICORN_THREADS") or 3)
    sizes = {
        "web": int(os.environ.get("WEB_CONCURRENCY", "2")) * min(web_threads, pool),
        "worker": settings.Q_CLUSTER["workers"] * (pool + 1) + QCLUSTER_EXTRA_CONNECTIONS,
        "deliverer": settings.Q_CLUSTER["ALT_CLUSTERS"]["deliveries"]["workers"] * (pool + 1)
        + QCLUSTER_EXTRA_CONNECTIONS,
        "scheduler": min(2, pool),
    }
    return sum(sizes.get(kind, pool) * count for kind, count in processes.items())


@register(Tags.database)
def database_connections(app_configs=None, **kwargs) -> list[Warning]:
    """PostgreSQL refuses connections past max_connections (less those kept for superusers)."""
    if connection.vendor != "postgresql" or not pooled():
        return []
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int"
            )
            allowed = cursor.fetchone()[0]
    except DatabaseError:
        return []
    wanted = connections_at_most(settings.DATABASE_PROCESSES)
    if wanted <= allowed:
        return []
    return [
        Warning(
            f"The configured processes may open {wanted} database connections; the server allows {allowed}.",
            hint="Lower DATABASE_POOL_MAX_SIZE, Q_WORKERS or DELIVERY_WORKERS, run fewer processes "
            "(DATABASE_PROCESSES), or raise the server's max_connections.",
            id="core.W001",
        )
    ]

"""The stack's throwaway PostgreSQL database: dropped and made again for each start."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


class PostgresError(AssertionError):
    """The server could not be reached, or the URL names no database."""


def is_postgres(url: str) -> bool:
    return urlsplit(url).scheme in ("postgres", "postgresql", "pgsql", "postgis")


def postgres_drop(url: str) -> None:
    postgres_recreate(url, create=False)


def postgres_recreate(url: str, *, create: bool = True) -> None:
    """Drop and (unless not `create`) create the database of `url`, through the server's
    `postgres` database."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name:
        raise PostgresError(f"no database name in {url!r}")
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    try:
        conn = psycopg.connect(admin, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        raise PostgresError(
            f"PostgreSQL at {parts.hostname}:{parts.port or 5432} is unreachable ({exc}). "
            "Start it, e.g. `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`."
        ) from exc
    with conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if create:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

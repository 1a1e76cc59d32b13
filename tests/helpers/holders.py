"""Another process's claim holder (core/holders.py), made the way a process makes its own,
and ended the way a killed process's ends."""

from __future__ import annotations

import fcntl
import os
import secrets

import psycopg
from django.db import connection

from core.holders import NAMESPACE, advisory_key, current, holder_token, holders_folder
from tests.helpers.waiting import eventually


def _locked(number: int) -> bool:
    """Whether a session holds holder `number`'s advisory lock (pg_locks is read live, not
    from the transaction's snapshot as the statistics views are)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s"
            " AND objid = %s AND objsubid = 2",
            [NAMESPACE, number],
        )
        return cursor.fetchone()[0] > 0


class OtherHolder:
    """A holder's lock taken on a connection (PostgreSQL) or a file (SQLite) of its own;
    `die()` lets it go as the end of a killed process does."""

    def __init__(self) -> None:
        self.number = secrets.randbits(32)
        self.token = holder_token(self.number)  # a claim this holder took
        self._conn = self._fd = None
        if connection.vendor == "postgresql":
            self._conn = psycopg.connect(**connection.get_connection_params(), autocommit=True)
            self._conn.execute("SELECT pg_advisory_lock(%s, %s)", [NAMESPACE, advisory_key(self.number)])
        else:
            folder = holders_folder(connection)
            folder.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(folder / f"{self.number:08x}", os.O_RDONLY | os.O_CREAT, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __enter__(self) -> OtherHolder:
        return self

    def __exit__(self, *exc) -> None:
        self.die()

    def die(self) -> None:
        """Ends the holder; returns once the server has ended its session (it does so a moment
        after the connection closes, as after a kill)."""
        if self._conn is not None:
            self._conn.close()
            eventually(lambda: not _locked(self.number), "the server to end the holder's session")
        if self._fd is not None:
            os.close(self._fd)
        self._conn = self._fd = None


def lose_holder() -> None:
    """This process's holder loses its lock while the process lives: the server ends its
    session (PostgreSQL), or its file is removed (SQLite)."""
    holder = current.get()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [holder.conn.info.backend_pid])
    else:
        os.unlink(holders_folder(connection) / f"{holder.number:08x}")

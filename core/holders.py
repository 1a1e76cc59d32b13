"""The process's holder: what tells the other processes at once that the claims a process
held died with it. A running claim's token names its holder (`holder_token`); the holder keeps
a lock that goes with the process: on PostgreSQL a session-level advisory lock on a connection
of its own (the server drops it when the session ends), on SQLite an flock on a file beside
the database (the kernel drops it when the process ends). `HolderGone` is the condition a
claimer adds to "free". docs/ARCHITECTURE.md, "The due-work kernel".
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import re
import secrets
import select
import tempfile
import threading
import uuid
from pathlib import Path

from django.db import connection
from django.db.models import BooleanField, Func

HOLDER = "h"  # a token naming its holder: HOLDER, the holder's number (8 hex digits), random digits
# The same for a queued claim whose task a pusher has taken from the broker (core/due.py
# `prefetch`): the pusher is its holder until a worker takes the task.
PUSHER = "p"
_NAMED = re.compile(r"[hp]([0-9a-f]{8})")
# The advisory locks' first key (two-key form, so no other user of single-key locks collides);
# the second is the holder's number.
NAMESPACE = 0x616D
SQLITE_FUNCTION = "automedia_holder_gone"
# The test is the same on both databases: the token names a holder and its lock is free. On
# PostgreSQL taking it for the transaction is the test (a live session's lock refuses it; the
# claimer's transaction lets it go), and CASE keeps any other token away from the cast.
_PG_GONE = (
    "(CASE WHEN %(expressions)s ~ '^[hp][0-9a-f]{8}' THEN pg_try_advisory_xact_lock("
    f"{NAMESPACE}, ('x' || substr(%(expressions)s, 2, 8))::bit(32)::int) ELSE false END)"
)


class HolderGone(Func):
    """True for a row whose claim token names a holder whose lock is free: the process that
    held it has died (or lost its session), so the claim is free whatever its lease says."""

    function = SQLITE_FUNCTION  # registered on each SQLite connection (`sqlite_functions`)
    output_field = BooleanField()
    arity = 1

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template=_PG_GONE, **extra)


def holder_token(number: int, *, tail: str | None = None, prefix: str = HOLDER) -> str:
    """A token of 32 characters that names holder `number`: then `tail` (23 characters),
    or random digits."""
    return f"{prefix}{number:08x}{tail if tail is not None else uuid.uuid4().hex[9:]}"


def advisory_key(number: int) -> int:
    """The holder's number as PostgreSQL's `('x' || hex)::bit(32)::int` reads it."""
    return number - (1 << 32) if number >= 1 << 31 else number


class _SessionHolder:
    """PostgreSQL: a connection of its own (not the pool's: a pooled connection outlives a
    checkout and may be closed by the pool) holding the advisory lock (NAMESPACE, number)."""

    def __init__(self) -> None:
        import psycopg

        self.conn = psycopg.connect(**connection.get_connection_params(), autocommit=True)
        while True:
            number = secrets.randbits(32)
            lock = self.conn.execute("SELECT pg_try_advisory_lock(%s, %s)", [NAMESPACE, advisory_key(number)])
            if lock.fetchone()[0]:
                self.number = number
                return

    def intact(self) -> bool:
        """The session still holds the lock: nothing arrived on the idle connection (a server
        that ends a session sends its error and closes)."""
        if self.conn.closed:
            return False
        return not select.select([self.conn.fileno()], [], [], 0)[0]

    def forget(self) -> None:
        """In a forked child: the socket is the parent's. The child's copy is pointed at
        /dev/null (so the parent's session ends with the parent, and a close never reaches it)."""
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, self.conn.fileno())
        os.close(null)

    def close(self) -> None:
        self.conn.close()


class _FileHolder:
    """SQLite (one machine): an flock on `<folder>/<number>`, made under a name of its own
    and linked to its number once locked, so no one ever finds it unlocked while its holder
    lives; a link that exists already is another holder's number."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{uuid.uuid4().hex}"
        self.fd = os.open(temporary, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        while True:
            self.number = secrets.randbits(32)
            self.path = folder / f"{self.number:08x}"
            try:
                os.link(temporary, self.path)
                break
            except FileExistsError:
                continue
        os.unlink(temporary)

    def intact(self) -> bool:
        """Still named by its number (a claimer unlinks only a file it could lock)."""
        return os.fstat(self.fd).st_nlink > 0

    def forget(self) -> None:
        os.close(self.fd)  # the child's copy: the lock stays with the parent's

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self.fd)


def holders_folder(wrapper) -> Path:
    """Where a SQLite database's holders keep their files: beside it; for a database in
    memory (one process) a folder of the user's in the temporary directory."""
    if wrapper.is_in_memory_db():
        return Path(tempfile.gettempdir()) / f"automedia-holders-{os.getuid()}"
    return Path(f"{wrapper.settings_dict['NAME']}-holders")


def file_gone(folder: Path, token: str | None) -> bool:
    """Whether `token` names a holder whose file is gone or unlocked; an unlocked one is
    removed (its number is never used again while its file exists)."""
    named = _NAMED.match(token or "")
    if named is None:
        return False
    path = folder / named.group(1)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return True
    finally:
        os.close(fd)


def sqlite_functions(sender, connection, **kwargs) -> None:
    """`connection_created` receiver: HolderGone's function on each SQLite connection."""
    if connection.vendor == "sqlite":
        gone = functools.partial(file_gone, holders_folder(connection))
        connection.connection.create_function(SQLITE_FUNCTION, 1, gone)


class _Current:
    """This process's holder, made on its first token and again after it is lost."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holder: _SessionHolder | _FileHolder | None = None
        self.inherited: list = []  # a forked child keeps its parent's, never closed

    def get(self) -> _SessionHolder | _FileHolder | None:
        with self.lock:
            if self.holder is not None and not self.holder.intact():
                with contextlib.suppress(Exception):
                    self.holder.close()
                self.holder = None
            if self.holder is None:
                self.holder = _made()
            return self.holder

    def intact(self, token: str) -> bool:
        """Whether `token` names this process's holder and its lock is still held."""
        holder = self.holder
        named = _NAMED.match(token)
        return (
            holder is not None
            and named is not None
            and int(named.group(1), 16) == holder.number
            and holder.intact()
        )

    def forget(self) -> None:
        self.lock = threading.Lock()  # another thread may have held it at the fork
        if self.holder is not None:
            self.holder.forget()
            self.inherited.append(self.holder)
            self.holder = None

    def release(self) -> None:
        """Let the lock go (at exit; tests before the test database is dropped)."""
        with self.lock:
            if self.holder is not None:
                self.holder.close()
                self.holder = None


def _made() -> _SessionHolder | _FileHolder | None:
    if connection.vendor == "postgresql":
        return _SessionHolder()
    if connection.vendor == "sqlite":
        return _FileHolder(holders_folder(connection))
    return None


current = _Current()
os.register_at_fork(after_in_child=current.forget)
atexit.register(current.release)


def new_holder_token() -> str:
    """A token naming this process's holder; a plain random one where there is none."""
    holder = current.get()
    return holder_token(holder.number) if holder is not None else uuid.uuid4().hex


def pusher_token(tail: str) -> str | None:
    """A token naming this process's holder as a pusher's (PUSHER) and ending in `tail`;
    None where there is no holder."""
    holder = current.get()
    return holder_token(holder.number, tail=tail, prefix=PUSHER) if holder is not None else None


def token_intact(token: str) -> bool:
    """For a claim this process holds: its holder still holds its lock, so no one can have
    taken the claim while its lease lasts. False for a token of a holder lost since."""
    if not _NAMED.match(token):
        return True  # no holder: only the lease counts, as before
    return current.intact(token)

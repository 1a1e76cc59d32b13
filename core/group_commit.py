"""Group commit: the short writes of several threads made in one transaction.

The rows of a delivery batch run in threads and each ends its send with a short write.
A thread hands its write to the group: it commits at once with every waiting write, or
waits for the commit under way to take it along; no timer, so a lone write costs what it
did alone. Why and how it fails safely: docs/ARCHITECTURE.md, "One commit per send".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, transaction

T = TypeVar("T")
Item = TypeVar("Item")


@dataclass(frozen=True)
class Together(Generic[Item]):
    """A write made with the group's other writes of the same `many` in one `many(items)`
    (one statement per table for the group, after its other writes); alone (or outside a
    group), `many([item])`."""

    many: Callable[[list[Item]], None]
    item: Item

    def __call__(self) -> None:
        self.many([self.item])


class _Write(Generic[T]):
    def __init__(self, make: Callable[[], T]) -> None:
        self.make = make
        self.done = False  # set under the group's lock, when its commit has ended
        self.settled = False
        self.value: T | None = None
        self.error: BaseException | None = None

    def settle(self, value: T | None = None, error: BaseException | None = None) -> None:
        self.value, self.error, self.settled = value, error, True

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class GroupCommit:
    """The writes of one group of threads (e.g. the rows of one batch).

    A write only touches the database (never an HTTP call: the transaction would hold it)
    and may be made twice: when the group's transaction fails, each write is made again in
    a transaction of its own, so one write's error reaches only its own thread. Inside a
    transaction of the caller, a write is made there and then."""

    def __init__(self, using: str = DEFAULT_DB_ALIAS) -> None:
        self.using = using
        self._changed = threading.Condition()
        self._waiting: list[_Write] = []
        self._committing = False
        self.commits = 0  # transactions committed: one per group, more after a failed group

    def waiting(self) -> int:
        """Writes handed over and not yet taken by a commit."""
        with self._changed:
            return len(self._waiting)

    def write(self, make: Callable[[], T]) -> T:
        """`make()` committed, alone or with the group's other waiting writes; returns
        its value or raises its error."""
        if transaction.get_connection(self.using).in_atomic_block:
            return make()
        mine = _Write(make)
        with self._changed:
            self._waiting.append(mine)
            while self._committing and not mine.done:
                self._changed.wait()
            if mine.done:  # another thread's commit took it along
                return mine.outcome()
            self._committing = True
            group, self._waiting = self._waiting, []
        try:
            self._commit(group)
        finally:
            with self._changed:
                for write in group:
                    if not write.settled:  # the commit itself was interrupted
                        write.settle(error=RuntimeError("the group's commit was interrupted"))
                    write.done = True
                self._committing = False
                self._changed.notify_all()
        return mine.outcome()

    def _commit(self, group: list[_Write]) -> None:
        try:
            with transaction.atomic(using=self.using):
                values = _made(group)
        except Exception as exc:
            if len(group) == 1:
                group[0].settle(error=exc)
                return
            for write in group:  # again one by one: an error reaches only its own thread
                self._alone(write)
            return
        self.commits += 1
        for write, value in zip(group, values, strict=True):
            write.settle(value)

    def _alone(self, write: _Write) -> None:
        try:
            with transaction.atomic(using=self.using):
                value = write.make()
        except Exception as exc:
            write.settle(error=exc)
        else:
            self.commits += 1
            write.settle(value)


def _made(group: list[_Write]) -> list:
    """Each write's value; the `Together` writes (None) in one call per `many`."""
    values: list = [None] * len(group)
    together: dict[Callable[[list[Any]], None], list[Any]] = {}
    for at, write in enumerate(group):
        if isinstance(write.make, Together):
            together.setdefault(write.make.many, []).append(write.make.item)
        else:
            values[at] = write.make()
    for many, items in together.items():
        many(items)
    return values

"""Group commit (core/group_commit.py): writes handed over while one commits go in the next
transaction together; an error reaches only its own thread."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from core.group_commit import GroupCommit, Together
from core.models import Tenant
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def rename(tenant: Tenant, name: str, value=None):
    def make():
        Tenant.objects.filter(pk=tenant.pk).update(name=name)
        if isinstance(value, Exception):
            raise value
        return value

    return make


def names(tenants: list[Tenant]) -> list[str]:
    return [Tenant.objects.get(pk=t.pk).name for t in tenants]


class Threads:
    """Each write in a thread of its own (with its own connection), its outcome kept."""

    def __init__(self, group: GroupCommit) -> None:
        self.group, self.outcomes, self.threads = group, {}, []

    def start(self, n: int, make) -> None:
        def run():
            try:
                self.outcomes[n] = self.group.write(make)
            except Exception as exc:
                self.outcomes[n] = exc
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        self.threads.append(thread)
        thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in self.threads)


def with_first_write_held(group: GroupCommit, tenants: list[Tenant], later) -> Threads:
    """The first write holds its commit open until `later` (the other writes) are all
    waiting; returns once every thread has ended."""
    inside, let_go = threading.Event(), threading.Event()

    def first():
        Tenant.objects.filter(pk=tenants[0].pk).update(name="written 0")
        inside.set()
        assert let_go.wait(10)
        return 0

    threads = Threads(group)
    threads.start(0, first)
    assert inside.wait(10)
    for n, make in later:
        threads.start(n, make)
    deadline = time.monotonic() + 10
    while group.waiting() < len(later) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert group.waiting() == len(later)
    let_go.set()
    threads.join()
    return threads


def test_writes_handed_over_while_one_commits_are_committed_together_in_the_next_transaction():
    tenants = [TenantFactory(slug=f"t{n}") for n in range(4)]
    group = GroupCommit()

    threads = with_first_write_held(
        group, tenants, [(n, rename(tenants[n], f"written {n}", n)) for n in (1, 2, 3)]
    )

    assert threads.outcomes == {0: 0, 1: 1, 2: 2, 3: 3}
    assert group.commits == 2  # the first write alone, then the three that waited for it
    assert names(tenants) == [f"written {n}" for n in range(4)]


def test_a_write_that_fails_in_a_group_fails_alone_and_the_others_are_committed():
    tenants = [TenantFactory(slug=f"t{n}", name="before") for n in range(4)]
    group = GroupCommit()
    broken = ValueError("a bug in one row")

    threads = with_first_write_held(
        group,
        tenants,
        [
            (1, rename(tenants[1], "written 1", 1)),
            (2, rename(tenants[2], "written 2", broken)),
            (3, rename(tenants[3], "written 3", 3)),
        ],
    )

    assert threads.outcomes == {0: 0, 1: 1, 2: broken, 3: 3}
    assert names(tenants) == ["written 0", "written 1", "before", "written 3"]  # its own write undone
    assert group.commits == 3  # the first, then 1 and 3 each alone after the group failed


def test_a_lone_write_commits_at_once_and_its_error_reaches_its_caller():
    tenant = TenantFactory(slug="t", name="before")
    group = GroupCommit()

    assert group.write(rename(tenant, "after", "value")) == "value"
    with pytest.raises(ValueError):
        group.write(rename(tenant, "undone", ValueError("no")))

    assert names([tenant]) == ["after"]
    assert group.commits == 1


def test_a_write_inside_the_callers_transaction_stays_in_it_and_rolls_back_with_it():
    tenant = TenantFactory(slug="t", name="before")
    group = GroupCommit()

    with pytest.raises(RuntimeError), transaction.atomic():
        group.write(rename(tenant, "after"))
        raise RuntimeError("the caller's own work failed")

    assert names([tenant]) == ["before"]
    assert group.commits == 0


class Renames:
    """A `many` that renames its tenants in one call, and counts its calls."""

    def __init__(self, fails_with: str = "") -> None:
        self.calls: list[list[str]] = []
        self.fails_with = fails_with

    def __call__(self, items: list[tuple[Tenant, str]]) -> None:
        self.calls.append([name for _, name in items])
        for tenant, name in items:
            Tenant.objects.filter(pk=tenant.pk).update(name=name)
        if any(name == self.fails_with for _, name in items):
            raise ValueError(f"cannot write {self.fails_with}")


def test_writes_of_the_same_many_that_wait_together_are_made_in_one_call():
    tenants = [TenantFactory(slug=f"t{n}") for n in range(4)]
    group, many = GroupCommit(), Renames()

    threads = with_first_write_held(
        group, tenants, [(n, Together(many, (tenants[n], f"written {n}"))) for n in (1, 2, 3)]
    )

    assert threads.outcomes == {0: 0, 1: None, 2: None, 3: None}
    assert [sorted(call) for call in many.calls] == [["written 1", "written 2", "written 3"]]
    assert names(tenants) == [f"written {n}" for n in range(4)]
    assert group.commits == 2


def test_a_together_write_that_fails_in_its_call_fails_alone_and_the_others_are_made_one_by_one():
    tenants = [TenantFactory(slug=f"t{n}", name="before") for n in range(4)]
    group, many = GroupCommit(), Renames(fails_with="written 2")

    threads = with_first_write_held(
        group, tenants, [(n, Together(many, (tenants[n], f"written {n}"))) for n in (1, 2, 3)]
    )

    assert threads.outcomes[1] is None and threads.outcomes[3] is None
    assert isinstance(threads.outcomes[2], ValueError)
    assert names(tenants) == ["written 0", "written 1", "before", "written 3"]
    assert len(many.calls) == 4  # the group's call, then each write alone
    assert sorted(many.calls[1:]) == [["written 1"], ["written 2"], ["written 3"]]

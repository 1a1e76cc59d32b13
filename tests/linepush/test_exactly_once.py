"""Property: whatever happens — enqueues, passes, 5xx, lost answers, timeouts, 4xx, crashed
workers, time passing — LINE never accepts one dedupe key twice, and an item is `sent`
only when LINE took it exactly once. The assertions are on what the fake LINE accepted.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linepush.models import LinePushItem
from linepush.push import push_claim
from linepush.sending import push_items
from tests.helpers.linepush import PUSH, enqueue, group, shop, step

pytestmark = pytest.mark.django_db

KEYS = 4
operations = st.lists(
    st.one_of(
        st.tuples(st.just("enqueue"), st.integers(0, KEYS - 1), st.integers(0, 1)),
        st.tuples(st.just("pass")),
        st.tuples(st.just("fault"), st.sampled_from(["5xx", "lost-answer", "429", "4xx", "slow-accept"])),
        st.tuples(st.just("crash"), st.booleans()),  # True: died after pushing, False: before
        st.tuples(st.just("wait"), st.integers(1, 120)),
    ),
    max_size=14,
)


@pytest.fixture
def world(line, settings):
    settings.LINE_TIMEOUT_SECONDS = 0.2
    tenant = shop()
    groups = [group(tenant, rate_limit_count=1000), group(tenant, rate_limit_count=1000)]
    return tenant, groups, line


def _fault(line, kind: str) -> None:
    if kind == "5xx":
        line.fail_next(503, path_prefix=PUSH)
    elif kind == "lost-answer":
        line.fail_next(500, path_prefix=PUSH, then_accept=True)
    elif kind == "429":
        line.fail_next(429, path_prefix=PUSH, headers={"Retry-After": "1"})
    elif kind == "4xx":
        line.fail_next(400, path_prefix=PUSH)
    else:  # accepted, but the answer comes after the client's timeout
        line.fail_next(0, path_prefix=PUSH, delay=0.25, then_accept=True)


def _crash(after_push: bool) -> None:
    claims = push_claim(now=timezone.now(), limit=50)
    if after_push:
        ids = [i for claim in claims for i in claim.item_ids]
        push_items(list(LinePushItem.objects.filter(pk__in=ids).select_related("tenant")))
    # … and the worker dies: nothing is recorded, the lease has to run out.


def _run(ops, tenant, groups, line, traveller) -> None:
    for op in ops:
        if op[0] == "enqueue":
            key = f"prop:{op[1]}"
            enqueue(tenant, groups[op[2]], key=key, trigger="task_approved", text=f"投稿 {key}")
        elif op[0] == "pass":
            step()
        elif op[0] == "fault":
            _fault(line, op[1])
        elif op[0] == "crash":
            _crash(op[1])
        else:
            traveller.shift(timedelta(seconds=op[1]))
    for _ in range(8):  # let every retry and lease run its course
        traveller.shift(timedelta(seconds=200))
        step()


def _accepted_per_key(line, ops) -> Counter:
    if ("fault", "slow-accept") in ops:
        time.sleep(0.3)  # the fake records a send when it answers: let a delayed answer go out
    return Counter(r.body["messages"][0]["text"].removeprefix("投稿 ") for r in line.sent(PUSH))


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
def test_no_dedupe_key_is_ever_accepted_twice(world, ops):
    tenant, groups, line = world
    line.reset()
    with transaction.atomic(), time_machine.travel(timezone.now(), tick=False) as traveller:
        _run(ops, tenant, groups, line, traveller)
        accepted = _accepted_per_key(line, ops)
        assert all(n == 1 for n in accepted.values()), accepted
        for item in LinePushItem.objects.all():
            if item.status == LinePushItem.Status.SENT:
                assert accepted[item.dedupe_key] == 1, (item.dedupe_key, item.attempts.values_list("outcome"))
            assert item.status != LinePushItem.Status.PENDING or item.lease_until is None
        transaction.set_rollback(True)

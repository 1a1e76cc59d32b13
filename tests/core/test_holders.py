"""Claim holders (core/holders.py): a claim whose holder died is free at once, whatever its
lease says; a live holder's is not; a holder that lost its lock no longer vouches for its
claims; a forked child leaves its parent's holder alone."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.utils import timezone

from core.due import Lease, claim, new_token
from core.holders import current, token_intact
from linepush.models import LinePushItem
from tests.helpers.factories import TenantFactory
from tests.helpers.holders import OtherHolder, lose_holder
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.django_db

LEASE = Lease(length=timedelta(minutes=1))


def held_item(token: str) -> LinePushItem:
    """A due item claimed with `token`, its lease far from over."""
    now = timezone.now()
    return LinePushItem.objects.create(
        tenant=TenantFactory(),
        ext_group_id="C1",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "x"}],
        dedupe_key=token,
        scheduled_at=now - timedelta(seconds=1),
        claimed_by=token,
        lease_until=now + timedelta(minutes=1),
    )


def claim_due() -> list[tuple[int, str]]:
    now = timezone.now()
    return claim(LinePushItem.objects.filter(scheduled_at__lte=now), now=now, lease=LEASE, limit=10)


def test_a_claim_whose_holder_died_is_taken_at_once_and_a_live_ones_is_not():
    with OtherHolder() as dead, OtherHolder() as live:
        lost, running = held_item(dead.token), held_item(live.token)
        assert claim_due() == []  # both holders alive: both leases hold

        dead.die()
        [(pk, token)] = claim_due()

    assert pk == lost.pk and token != dead.token
    running.refresh_from_db()
    assert running.claimed_by == live.token


def test_a_dead_holders_claim_is_not_in_flight():
    with OtherHolder() as dead:
        held_item(dead.token)

    assert not LinePushItem.objects.filter(LEASE.held(timezone.now())).exists()


def test_this_processs_claims_are_not_taken_while_it_lives():
    token = new_token()
    held_item(token)

    assert token_intact(token)
    assert claim_due() == []


def test_a_holder_that_lost_its_lock_vouches_for_nothing_and_a_new_one_is_made():
    token = new_token()
    item = held_item(token)

    lose_holder()

    eventually(lambda: not token_intact(token), "the holder to notice it lost its lock")
    [(pk, _)] = claim_due()
    assert pk == item.pk
    fresh = new_token()
    assert fresh[:9] != token[:9] and token_intact(fresh)


def test_a_forked_child_leaves_its_parents_holder_alone():
    token = new_token()
    held_item(token)

    child = os.fork()
    if child == 0:  # what a child does at its exit: let its holder go
        current.release()
        os._exit(0)
    os.waitpid(child, 0)

    assert token_intact(token)
    assert claim_due() == []

"""The rules about one schedule row, on DeliverySchedule: who holds it, and when a delivery owns it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from deliveries.models import DeliverySchedule
from tests.helpers.deliveries import make_schedule

pytestmark = pytest.mark.django_db


def test_it_lets_a_delivery_own_a_row_under_a_live_lease():
    now = timezone.now()
    schedule = make_schedule(lease_until=now + timedelta(seconds=1), claimed_by="w1")

    assert (schedule.is_held(now), schedule.delivery_owns(now)) == (True, True)


def test_it_frees_a_row_whose_lease_ran_out_or_never_was():
    now = timezone.now()
    expired = make_schedule(lease_until=now, claimed_by="w1")
    never = make_schedule(lease_until=None)

    assert [expired.delivery_owns(now), never.delivery_owns(now)] == [False, False]
    assert [expired.is_due(now), never.is_due(now)] == [True, True]


def test_it_lets_a_delivery_own_a_row_writing_back_without_a_lease():
    now = timezone.now()
    schedule = make_schedule(stage=DeliverySchedule.Stage.WRITEBACK, lease_until=None)

    assert (schedule.is_held(now), schedule.delivery_owns(now)) == (False, True)


def test_it_selects_free_and_held_rows_by_the_same_lease():
    now = timezone.now()
    held = make_schedule(lease_until=now + timedelta(seconds=5), claimed_by="w1")
    expired = make_schedule(lease_until=now - timedelta(seconds=1), claimed_by="w2")
    never = make_schedule(lease_until=None)

    free = set(DeliverySchedule.objects.filter(DeliverySchedule.free_q(now)).values_list("pk", flat=True))
    live = set(DeliverySchedule.objects.filter(DeliverySchedule.held_q(now)).values_list("pk", flat=True))

    assert (free, live) == ({expired.pk, never.pk}, {held.pk})

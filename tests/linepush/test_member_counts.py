"""A group's unknown member count is asked from LINE before its first push is counted."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from line.models import LineMonthlyUsage, LineSource
from linepush import member_counts
from linepush.models import LinePushItem
from tests.helpers.linepush import PUSH, enqueue, group, reload, shop, step

pytestmark = pytest.mark.django_db
Status = LinePushItem.Status
BIG = "C" + "5" * 32
ROOM = "R" + "6" * 32


@pytest.fixture
def tenant(db):
    return shop()


def used(tenant) -> int:
    return LineMonthlyUsage.objects.get(tenant=tenant).messages


def test_an_unknown_count_is_asked_from_line_before_the_push_is_counted(line, tenant):
    line.add_group(BIG, member_count=500)
    item = enqueue(tenant, group(tenant, BIG, members=None))

    step()

    assert reload(item).status == Status.SENT and reload(item).reserved_cost == 500
    assert LineSource.objects.get(group_id=BIG).member_count == 500
    assert used(tenant) == 500  # not 1
    assert [r.path for r in line.requests][:1] == [f"/v2/bot/group/{BIG}/members/count"]


def test_a_rooms_count_is_asked_from_the_room_endpoint(line, tenant):
    line.add_room(ROOM, member_count=7)
    item = enqueue(tenant, group(tenant, ROOM, members=None, kind=LineSource.Kind.ROOM))

    step()

    assert (reload(item).status, reload(item).reserved_cost) == (Status.SENT, 7)
    assert f"/v2/bot/room/{ROOM}/members/count" in [r.path for r in line.requests]


def test_a_post_waits_while_line_does_not_answer_the_count(line, tenant):
    line.add_group(BIG, member_count=500)
    line.fail_next(500, path_prefix="/v2/bot/group/")
    item = enqueue(tenant, group(tenant, BIG, members=None))

    step()

    item = reload(item)
    assert item.status == Status.PENDING and item.scheduled_at > timezone.now()
    assert "メンバー数を確認できない" in item.last_error
    assert not line.sent(PUSH) and not LineMonthlyUsage.objects.filter(tenant=tenant, messages__gt=0).exists()
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        step()
    assert (reload(item).status, reload(item).reserved_cost) == (Status.SENT, 500)


def test_a_group_line_does_not_know_fails_its_post_uncounted(line, tenant):
    line.add_group("C" + "7" * 32)  # BIG is not one of the bot's groups at LINE
    item = enqueue(tenant, group(tenant, BIG, members=None))

    step()

    assert reload(item).status == Status.FAILED and "メンバー数に答えない" in reload(item).last_error
    assert not line.sent(PUSH)


def test_a_post_whose_group_was_not_asked_yet_is_never_counted_as_one(line, tenant, monkeypatch):
    monkeypatch.setattr(member_counts, "PER_PASS", 0)  # more unknown groups than one pass asks
    item = enqueue(tenant, group(tenant, BIG, members=None))

    step()

    assert reload(item).status == Status.PENDING and reload(item).reserved_cost == 0
    assert not line.sent(PUSH) and not LineMonthlyUsage.objects.filter(tenant=tenant, messages__gt=0).exists()


def test_a_group_row_keeps_its_id_and_tenant(tenant):
    row = group(tenant, BIG)
    row.group_id = "C" + "8" * 32

    with pytest.raises(ValueError):
        row.save()
    assert LineSource.objects.get(pk=row.pk).group_id == BIG

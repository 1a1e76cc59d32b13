"""The quota forecast of the approval-time checks (line/forecast.py, with the deliveries
counted by deliveries/channels/line/quota.py and the group posts by linepush), against the
fake LINE: what a send costs, what the month has used and holds, the plan's allowance."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
import time_machine

from core.timeutil import JST
from deliveries.channels.line.quota import quota_forecast
from deliveries.models import DeliverySchedule
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from tests.helpers.factories import ContentTaskFactory
from tests.helpers.linepush import enqueue, group, shop

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
USERS = [f"U{n:032x}" for n in range(7)]


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def tenant(db):
    return shop()


def forecast(tenant, plan, *, due_at=datetime(2026, 12, 10, 10, 0, tzinfo=JST), task=None):
    return quota_forecast(tenant=tenant, plan=plan, due_at=due_at, now=NOW, task=task)


def scheduled_delivery(tenant, messages: int, due_at: datetime) -> None:
    task = ContentTaskFactory(tenant=tenant, approval_checks={"line_messages": messages})
    DeliverySchedule.objects.create(
        tenant=tenant,
        task=task,
        name=DeliverySchedule.name_for(tenant, task.issue_key),
        due_at=due_at,
        reason=DeliverySchedule.Reason.APPROVAL,
    )


def test_a_multicast_costs_its_users_and_a_group_push_its_members(line, tenant):
    line.add_group("C" + "a" * 32, member_count=12)

    result = forecast(tenant, [("multicast", USERS), ("push", "C" + "a" * 32)])

    assert result.messages == 7 + 12


def test_the_month_holds_lines_count_and_what_automedia_has_not_sent_yet(line, tenant):
    line.set_quota(type="none", total_usage=50)
    scheduled_delivery(tenant, 30, datetime(2026, 12, 20, 10, 0, tzinfo=JST))
    scheduled_delivery(tenant, 1000, datetime(2027, 1, 5, 10, 0, tzinfo=JST))  # next month's
    enqueue(tenant, group(tenant, members=8), scheduled_at=datetime(2026, 12, 2, 8, 0, tzinfo=JST))

    result = forecast(tenant, [("multicast", USERS)])

    assert (result.line_used, result.pending, result.used, result.after) == (50, 38, 88, 95)
    assert (result.allowance, result.line_limit, result.problem()) == (None, None, "")
    assert result.note == "プラン未設定で LINE も上限を示していないため通数では判定しない"


def test_a_send_due_next_month_counts_only_that_months_schedules(line, tenant):
    LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="communication"))
    line.set_quota(type="limited", value=200, total_usage=199)
    scheduled_delivery(tenant, 40, datetime(2027, 1, 5, 10, 0, tzinfo=JST))

    result = forecast(tenant, [("multicast", USERS)], due_at=datetime(2027, 1, 6, 10, 0, tzinfo=JST))

    assert (result.line_used, result.pending, result.line_limit, result.this_month) == (0, 40, None, False)
    assert result.line().startswith("クォータ見込み: 7 通（2027-01 0 / 200、予約済みで未送信 40 通）")
    assert result.problem() == ""


def test_it_falls_back_to_the_last_daily_check_when_line_cannot_answer(line, tenant):
    LineMonthlyUsage.objects.create(tenant=tenant, month="2026-12", messages=195, line_limit=200)
    line.fail_next(500, count=10, path_prefix="/v2/bot/message/quota")

    result = forecast(tenant, [("multicast", USERS)])

    assert (result.line_used, result.line_limit) == (195, 200)
    assert "今月の使用数は LINE に確認できず、前回の記録で計算" in result.note
    assert result.problem().startswith("LINE の今月の送信上限 200 通を超えます")


def test_a_plan_with_extra_messages_prices_only_this_sends_overage(line, tenant):
    LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="standard"))
    line.set_quota(type="none", total_usage=29_996)

    result = forecast(tenant, [("multicast", USERS)])

    assert (result.overage, result.overage_cost_yen, result.problem()) == (3, Decimal("9"), "")


def test_the_plans_carry_todays_price_of_an_extra_message(db):
    prices = {p.code: (p.additional_messages, p.extra_message_price_yen) for p in LinePlan.objects.all()}

    assert prices == {
        "communication": (False, None),
        "light": (False, None),
        "standard": (True, Decimal("3.00")),
    }


def test_it_counts_a_tenant_without_a_plan_against_lines_own_limit(line, tenant):
    line.add_group("C" + "a" * 32, member_count=5)
    line.set_quota(type="limited", value=5000, total_usage=1495)

    result = forecast(tenant, [("push", "C" + "a" * 32)])

    assert (result.allowance, result.line_limit, result.after, result.problem()) == (None, 5000, 1500, "")
    assert result.line() == (
        "クォータ見込み: 5 通（今月 1,495 / LINE の上限 5,000）（プラン未設定のため LINE の上限 5,000 通で判定）"
    )


def test_without_a_plan_lines_own_limit_still_refuses_what_line_would_refuse(line, tenant):
    line.set_quota(type="limited", value=5000, total_usage=4995)

    result = forecast(tenant, [("multicast", USERS)])

    assert result.problem().startswith("LINE の今月の送信上限 5,000 通を超えます")


def test_without_a_plan_and_without_a_limit_from_line_nothing_is_refused(line, tenant):
    line.set_quota(type="none", total_usage=100_000)

    result = forecast(tenant, [("multicast", USERS)])

    assert (result.overage, result.problem()) == (0, "")
    assert result.line().startswith("クォータ見込み: 7 通（今月 100,000 / 上限なし）")


def test_without_a_plan_no_registered_plan_is_assumed(line, tenant):
    LinePlan.objects.all().delete()
    line.set_quota(type="limited", value=5000, total_usage=300)

    result = forecast(tenant, [("multicast", USERS)])

    assert (result.plan_name, result.allowance, result.problem()) == ("", None, "")

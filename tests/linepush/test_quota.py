"""The daily quota check against LINE's quota endpoints (fake LINE on loopback)."""

from __future__ import annotations

import pytest
from django.core import mail

from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from linepush.models import LinePushItem
from linepush.tasks import quota_check_daily
from tests.helpers.linepush import PUSH, enqueue, group, reload, shop, step

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant(db):
    return shop()


def test_it_stores_lines_limit_and_usage_and_warns_at_80_percent(line, tenant):
    line.set_quota(type="limited", value=1000, total_usage=850)

    results = quota_check_daily()

    usage = LineMonthlyUsage.objects.get(tenant=tenant)
    assert (usage.line_limit, usage.line_total_usage, usage.messages) == (1000, 850, 850)
    assert results["shop"] == "850/1000 released=0"
    [warning] = mail.outbox
    assert "（850 / 1,000 通）" in warning.body
    quota_check_daily()
    assert len(mail.outbox) == 1  # once per month


def test_the_plan_caps_the_limit_when_line_reports_none(line, tenant):
    LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="light"))
    line.set_quota(type="none", total_usage=4100)

    assert quota_check_daily()["shop"] == "4100/5000 released=0"
    assert len(mail.outbox) == 1


def test_it_releases_held_posts_when_there_is_room_again(line, tenant):
    LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="communication"))
    line.set_quota(type="limited", value=200, total_usage=199)
    quota_check_daily()
    item = enqueue(tenant, group(tenant))
    step()
    assert reload(item).status == LinePushItem.Status.HELD

    LinePushSettings.objects.filter(tenant=tenant).update(plan=LinePlan.objects.get(code="light"))
    line.set_quota(type="limited", value=5000, total_usage=199)  # upgraded mid-month
    assert quota_check_daily()["shop"] == "199/5000 released=1"

    step()
    assert reload(item).status == LinePushItem.Status.SENT
    assert len(line.sent(PUSH)) == 1


def test_held_posts_stay_held_while_there_is_no_room(line, tenant):
    LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="communication"))
    line.set_quota(type="limited", value=200, total_usage=200)
    quota_check_daily()
    item = enqueue(tenant, group(tenant))
    step()

    assert quota_check_daily()["shop"] == "200/200 released=0"
    assert reload(item).status == LinePushItem.Status.HELD


def test_it_has_the_three_japanese_plans_as_data(db):
    plans = {p.code: (p.name, p.monthly_messages) for p in LinePlan.objects.all()}

    assert plans == {
        "communication": ("コミュニケーションプラン", 200),
        "light": ("ライトプラン", 5000),
        "standard": ("スタンダードプラン", 30000),
    }


def test_a_failed_check_is_reported_not_raised(line, tenant):
    line.fail_next(500, path_prefix="/v2/bot/message/quota")

    assert quota_check_daily()["shop"].startswith("error: サーバーエラー（500）")
    assert line.sent(PUSH) == []

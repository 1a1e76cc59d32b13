"""The one LINE usage figure (line/usage.py): the plan and LINE's own limit, and a tenant
without a plan counted against LINE's limit alone."""

from __future__ import annotations

import pytest

from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from line.usage import line_usage, usage_observe
from tests.helpers.linepush import shop

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant(db):
    return shop()


def observed(tenant, used: int, line_limit: int | None) -> None:
    usage_observe(tenant=tenant, month=line_usage(tenant=tenant).month, used=used, line_limit=line_limit)


def test_it_counts_a_tenant_without_a_plan_against_lines_limit(tenant):
    LinePushSettings.objects.create(tenant=tenant)  # no plan chosen
    observed(tenant, 1500, 5000)

    usage = line_usage(tenant=tenant)

    assert (usage.used, usage.limit, usage.percent, usage.plan) == (1500, 5000, 30, None)
    assert str(usage) == "今月 1,500 / 5,000 通"
    assert usage.plan_label == "プラン未設定（LINE の上限だけで判定）"


def test_without_a_plan_and_without_a_limit_from_line_there_is_no_cap(tenant):
    observed(tenant, 1500, None)  # LINE answered `type: none`; no settings row at all

    usage = line_usage(tenant=tenant)

    assert (usage.limit, usage.percent) == (None, None)
    assert str(usage) == "今月 1,500 通（上限なし）"


def test_no_registered_plan_is_assumed_for_a_tenant_without_one(tenant):
    # The free plan's 200 is a plan like any other: it caps only the tenants on it.
    assert LinePlan.objects.filter(code="communication", monthly_messages=200).exists()
    observed(tenant, 300, 5000)

    assert line_usage(tenant=tenant).limit == 5000


def test_the_lower_of_the_plan_and_lines_limit_is_the_limit(tenant):
    LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="communication"))
    observed(tenant, 150, 5000)

    usage = line_usage(tenant=tenant)

    assert (str(usage), usage.percent, usage.plan_label) == (
        "今月 150 / 200 通",
        75,
        "コミュニケーションプラン",
    )
    assert LineMonthlyUsage.objects.get(tenant=tenant).line_limit == 5000

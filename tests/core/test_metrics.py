"""`automedia_approvals_refused_total`: every refused approval counted once, by what refused it."""

from __future__ import annotations

import re

import pytest

from console.models import DeliveryOutcome
from tests.helpers.backlog import approve, body
from tests.helpers.console import mirrored_issue

pytestmark = pytest.mark.django_db


def refused_count(client, reason: str) -> float:
    text = client.get("/metrics").content.decode()
    match = re.search(rf'^automedia_approvals_refused_total{{reason="{reason}"}} (\S+)$', text, re.M)
    return float(match.group(1)) if match else 0.0


def test_it_counts_refused_approvals_by_reason_in_metrics(
    client, fake_backlog, pump, tenant, template, contacts, line, settings
):
    settings.METRICS_PUBLIC = True  # no METRICS_TOKEN here: refused outside DEBUG otherwise
    before = {reason: refused_count(client, reason) for reason in ("body", "quiet_hours", "checks")}
    tenant.quiet_hours = {"ranges": [{"from": "22:00", "to": "07:00"}], "mode": "reject"}
    tenant.save()
    for description in (
        body(when="来週の月曜の朝"),
        body().replace("LINE", "LIEN"),
        body(when="2099-12-10 23:30"),
        body(when="2099-12-10 10:00").replace("- hours: 7:00-18:00\n", ""),
    ):
        task = mirrored_issue(fake_backlog, pump, tenant, description=description)
        approve(fake_backlog, pump, tenant, task.issue_key)

    after = {reason: refused_count(client, reason) for reason in before}
    assert {reason: after[reason] - before[reason] for reason in before} == {
        "body": 2,
        "quiet_hours": 1,
        "checks": 1,
    }
    kinds = DeliveryOutcome.objects.filter(tenant=tenant).values_list("kind", flat=True)
    assert list(kinds) == [DeliveryOutcome.Kind.REFUSED] * 4

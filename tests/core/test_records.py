"""The twin record models share one abstract base and keep their tables."""

from __future__ import annotations

import pytest

from backlog_bridge.models import BacklogEvent
from core.records import OutboundAttempt, StoredWebhookEvent
from deliveries.models import DeliveryAttempt
from line.models import LineWebhookEvent
from linepush.models import LinePushAttempt


@pytest.mark.parametrize(
    ("model", "base", "table"),
    [
        (BacklogEvent, StoredWebhookEvent, "backlog_bridge_backlogevent"),
        (LineWebhookEvent, StoredWebhookEvent, "linepush_linewebhookevent"),
        (DeliveryAttempt, OutboundAttempt, "deliveries_deliveryattempt"),
        (LinePushAttempt, OutboundAttempt, "linepush_linepushattempt"),
    ],
)
def test_it_keeps_each_twin_on_its_table_with_the_shared_fields(model, base, table):
    assert issubclass(model, base)
    assert model._meta.db_table == table
    shared = {f.name for f in base._meta.fields}
    assert shared <= {f.name for f in model._meta.fields}
    assert model.Outcome is base.Outcome


def test_it_keeps_the_attempts_newest_first():
    assert DeliveryAttempt._meta.ordering == LinePushAttempt._meta.ordering == ["-created_at"]


def test_it_bounds_the_detail_and_frees_the_hold_when_an_event_finishes():
    finished = LineWebhookEvent.finished(outcome=LineWebhookEvent.Outcome.DONE, detail="x" * 5000)
    assert len(finished["detail"]) == 2000
    assert finished["claimed_until"] is None
    assert finished["processed_at"] is not None
    assert BacklogEvent(outcome="ignored").is_settled() and not BacklogEvent(outcome="failed").is_settled()

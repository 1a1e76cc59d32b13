"""The fake channel has nothing to measure."""

from __future__ import annotations

from datetime import datetime

from deliveries.models import ContentTask, EffectReport


def planned(*, task: ContentTask, delivered_at: datetime, outcome: dict) -> list[EffectReport]:
    return []


def measured(*, report: EffectReport, now: datetime) -> tuple[dict, str]:
    raise AssertionError("the fake channel plans no report")

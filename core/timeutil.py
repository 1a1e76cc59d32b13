"""Time helpers: store UTC, show and parse Asia/Tokyo."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

JST = ZoneInfo("Asia/Tokyo")


def fmt_jst(when: datetime) -> str:
    """For people: `2026-05-15 10:00:00 (JST)`."""
    return when.astimezone(JST).strftime("%Y-%m-%d %H:%M:%S (JST)")


def iso_jst(when: datetime) -> str:
    """For machines and Backlog fields: ISO-8601 with the +09:00 offset, whole seconds."""
    return when.astimezone(JST).replace(microsecond=0).isoformat()

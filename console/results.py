"""The engine's result strings (`issue_reconcile`'s decisions, `delivery_run`'s endings) in
the admin's language: they are kept as written in the records, and shown translated."""

from __future__ import annotations

import re
from datetime import datetime

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from core.timeutil import fmt_jst

# Whole results.
PLAIN = {
    "delivered": gettext_noop("配信済み"),
    "failed": gettext_noop("配信失敗"),
    "already delivered": gettext_noop("配信済みのため送信せず"),
    "no longer approved": gettext_noop("承認が外れたため送信せず"),
    "no change": gettext_noop("変更なし"),
    "schedule deleted": gettext_noop("配信予約を削除"),
    "deleted": gettext_noop("Backlog で削除"),
    "deleted; schedule removed": gettext_noop("Backlog で削除、配信予約を削除"),
    "unknown issue deleted": gettext_noop("未登録の課題の削除"),
    "own change, already applied": gettext_noop("automedia 自身の変更（反映済み）"),
}
# Results with a reason after the prefix.
PREFIXED = {
    "rejected: ": gettext_noop("承認不可: "),
    "invalidated: ": gettext_noop("承認取消: "),
    "invalid payload: ": gettext_noop("受付不可の内容: "),
    "gave up after 5 attempts: ": gettext_noop("5 回失敗したため中止: "),
}
# Results with a time (ISO 8601) after the prefix.
TIMED = {
    "scheduled at ": gettext_noop("配信予約: "),
    "rescheduled at ": gettext_noop("配信予約を変更: "),
}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d\d:\d\d|Z)?$")


def result_label(result: str) -> str:
    """`rejected: …` → 承認不可: …, `scheduled at 2026-…` → 配信予約: 2026-… (JST); others as they are."""
    if result in PLAIN:
        return _(PLAIN[result])
    for prefix, label in PREFIXED.items():
        if result.startswith(prefix):
            return _(label) + result.removeprefix(prefix)
    for prefix, label in TIMED.items():
        when = result.removeprefix(prefix)
        if result.startswith(prefix) and ISO.match(when):
            return _(label) + fmt_jst(datetime.fromisoformat(when))
    return result


def rejected_reason_label(record) -> str:
    """A stored webhook event's reason for being rejected (core.records), translated."""
    return result_label(record.rejected_reason())

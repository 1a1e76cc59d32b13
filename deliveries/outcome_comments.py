"""The Backlog comment of a delivery's write-back: what was sent, or why it failed."""

from __future__ import annotations

from django.utils import timezone

from backlog_bridge.body.channels import DEFAULT_CHANNEL
from core.timeutil import fmt_jst
from deliveries.channels.publishing import outcome_lines
from deliveries.channels.tokens import renewal_advice


def success_comment(outcome: dict) -> str:
    return "\n".join([f"[automedia] dispatched at {outcome['delivered_at']}", *outcome_lines(outcome)])


def failure_comment(outcome: dict) -> str:
    text = f"[automedia] failed: {outcome['reason']}"
    if outcome.get("auth"):
        # An outcome kept before outcomes named their channel is the default channel's.
        text += "\n" + renewal_advice(outcome.get("channel") or DEFAULT_CHANNEL)
    return (
        text
        + f"\n（{fmt_jst(timezone.now())}）内容を修正して、もう一度「automedia承認」にすると再実行します。"
    )

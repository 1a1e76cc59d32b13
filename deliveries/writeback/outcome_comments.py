"""The Backlog comment of a delivery's write-back: what was sent, or why it failed."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from core.channels import DEFAULT_CHANNEL
from core.timeutil import fmt_jst
from deliveries.channels.publishing import outcome_lines
from deliveries.channels.token_upkeep import renewal_advice

# The first words a manager reads on the issue; the `[automedia]` mark lets the comment
# commands know automedia's own comments (deliveries/comment_commands/run.py, OWN_PREFIX).
DELIVERED_HEAD = "[automedia] 配信しました: "
FAILED_HEAD = "[automedia] 配信できませんでした: "


def success_comment(outcome: dict) -> str:
    delivered_at = fmt_jst(datetime.fromisoformat(outcome["delivered_at"]))
    return "\n".join([f"{DELIVERED_HEAD}{delivered_at}", *outcome_lines(outcome)])


def failure_comment(outcome: dict) -> str:
    text = f"{FAILED_HEAD}{outcome['reason']}"
    if outcome.get("auth"):
        # An outcome kept before outcomes named their channel is the default channel's.
        text += "\n" + renewal_advice(outcome.get("channel") or DEFAULT_CHANNEL)
    return (
        text
        + f"\n（{fmt_jst(timezone.now())}）内容を修正して、もう一度「automedia承認」にすると再実行します。"
    )

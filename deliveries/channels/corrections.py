"""Corrections after a delivery (`/automedia correct`, the admin's 訂正を送る): each channel's
`correction` module sends one (`correction_send`) or says what a person can do instead,
and says whether it sends corrections at all (`CORRECTS`)."""

from __future__ import annotations

from dataclasses import dataclass

from deliveries.channels.registry import channel_part, kind_of
from deliveries.models import ContentTask


@dataclass(frozen=True)
class CorrectionResult:
    sent: bool
    message: str  # Japanese, for the Backlog comment or the admin's message


def correction_send(*, task: ContentTask | None, text: str, by: str) -> CorrectionResult:
    """Send `text` as a correction of the task's last delivery, on its channel."""
    if task is None:
        return CorrectionResult(
            False, "この課題は automedia に登録されていません（訂正する配信がありません）。"
        )
    return channel_part(kind_of(task.channel), "correction").correction_send(task=task, text=text, by=by)


def corrects(channel: str) -> bool:
    """Whether a task of `channel` can be sent a correction (the admin shows the action)."""
    return channel_part(kind_of(channel), "correction").CORRECTS


def post_refusal(task: ContentTask, answer: str) -> CorrectionResult:
    """An account channel's answer: its posts take no correction from automedia."""
    return CorrectionResult(False, f"{task.channel_label} の投稿には訂正を送れません。{answer}")

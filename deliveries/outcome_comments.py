"""The Backlog comment of a delivery's write-back: what was sent, or why it failed."""

from __future__ import annotations

from django.utils import timezone

from core.timeutil import fmt_jst
from deliveries.models import CHANNEL_LABELS


def success_comment(outcome: dict) -> str:
    if outcome.get("channel"):
        return "\n".join([f"[automedia] dispatched at {outcome['delivered_at']}", *outcome["post"]["lines"]])
    ids = ", ".join(outcome["request_ids"])
    text = (
        f"[automedia] dispatched at {outcome['delivered_at']}\n"
        f"LINE に配信しました。配信先: {outcome['recipients']} 件\nLINE リクエストID: {ids}"
    )
    if narrowcast := outcome.get("narrowcast"):
        text += f"\n{narrowcast_line(narrowcast)}"
    return text


def narrowcast_line(progress: dict) -> str:
    """`ナローキャスト: 成功 1,198 人 / 失敗 2 人 / 対象 1,200 人（オーディエンス 1,200 人）`"""
    counts = " / ".join(
        f"{label} {progress[key]:,} 人"
        for key, label in (("successCount", "成功"), ("failureCount", "失敗"), ("targetCount", "対象"))
        if isinstance(progress.get(key), int)
    )
    return f"ナローキャスト: {counts or '件数不明'}（オーディエンス {progress.get('audience', 0):,} 人）"


def failure_comment(outcome: dict) -> str:
    text = f"[automedia] failed: {outcome['reason']}"
    if outcome.get("auth") and outcome.get("channel"):
        label = CHANNEL_LABELS.get(outcome["channel"], outcome["channel"])
        text += f"\n{label} のトークンが期限切れか無効です。管理画面の「チャネルアカウント」か manage.py add_channel でトークンを更新してから、もう一度承認してください。"
    elif outcome.get("auth"):
        text += "\nLINE チャネルのトークンが期限切れか無効です。管理画面でトークンを更新してから、もう一度承認してください。"
    return (
        text
        + f"\n（{fmt_jst(timezone.now())}）内容を修正して、もう一度「automedia承認」にすると再実行します。"
    )

"""HubSpot's effect measurement: automedia's own send count (see deliveries/channel_effects.py)."""

from __future__ import annotations

from datetime import datetime

from deliveries.channel_effects import (
    MISSING,
    Measurement,
    figure,
    planned_recipients,
)
from deliveries.models import ChannelPost, EffectReport


def measure(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    """No HubSpot call: the reference gives no statistics endpoint for single-send email."""
    summary = post.details.get("summary") or {}
    email_id = str(summary.get("post_id") or (post.details.get("content") or {}).get("email_id") or "")
    sent = planned_recipients(post)
    lines = [
        f"配信から {report.label.removesuffix('h')} 時間後の HubSpot 集計です（メールID: {email_id}）。",
        f"- 送信数: {figure(sent, '件')}（automedia の送信記録。sendId ごとに 1 通）",
        f"- 開封・クリック: {MISSING}（automedia は HubSpot のメール統計を読み込んでいません。"
        "HubSpot のマーケティングメールの分析画面で確認してください）",
    ]
    return Measurement({"email_id": email_id, "sent": sent, "statistics": None}, lines)

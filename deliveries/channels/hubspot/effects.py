"""HubSpot's effect measurement: automedia's own send count, opens and clicks not read."""

from __future__ import annotations

from datetime import datetime

from deliveries.channels.models import ChannelPost
from deliveries.channels.platform_effects import (
    H24,
    MISSING,
    Measurement,
    content_type,
    figure,
    planned_recipients,
    post_measured,
    post_reports,
)
from deliveries.models import ContentTask, EffectReport


def planned(*, task: ContentTask, delivered_at: datetime, outcome: dict) -> list[EffectReport]:
    """One report of an email (automedia's count of sends); a CRM note has no statistics."""
    return post_reports(task=task, delivered_at=delivered_at, labels=_labels)


def _labels(post: ChannelPost) -> tuple[str, ...]:
    return (H24,) if content_type(post) == "email" else ()


def measured(*, report: EffectReport, now: datetime) -> tuple[dict, str]:
    return post_measured(report=report, now=now, measure=measure)


def measure(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    """No HubSpot call: the reference gives no statistics endpoint for single-send email. Its
    send-status endpoint (not confirmed) tells a send's state, not opens or clicks, and
    `GET /marketing/v3/emails/statistics/list` (not confirmed either) counts every send of
    an email id, not this task's."""
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

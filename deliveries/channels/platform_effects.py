"""What the effect measurement of Instagram, TikTok and HubSpot posts shares: the reports
planned for a finished `ChannelPost`, and the lines of their Backlog comment.

Each channel's effects.py reads its own platform's figures; deliveries/channels/effect_reports.py
claims the due reports, runs them and posts the comment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from core.channels import channel_label
from core.models import Tenant
from core.timeutil import fmt_jst
from core.transport import TransportError
from deliveries.channels.effect_reports import OFFSETS, PREFIX
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import ContentTask, EffectReport

H24, H72 = EffectReport.Label.H24, EffectReport.Label.H72
MISSING = "集計なし"  # a figure the platform left out: never shown as 0


@dataclass
class Measurement:
    """What a report stores (`result`) and the comment's lines after its first line."""

    result: dict
    lines: list[str]


# -- planning ------------------------------------------------------------------------


def post_reports(
    *, task: ContentTask, delivered_at: datetime, labels: Callable[[ChannelPost], tuple[str, ...]]
) -> list[EffectReport]:
    """The reports of the approval's finished publication, at the points `labels` gives it
    (the channel's; () when it has nothing to measure)."""
    post = ChannelPost.objects.filter(
        task=task, approval_seq=task.approval_seq, phase=ChannelPost.Phase.DONE
    ).first()
    if post is None:
        return []
    return [
        EffectReport(
            tenant_id=task.tenant_id,
            task=task,
            channel=post.channel,
            post=post,
            label=label,
            due_at=delivered_at + OFFSETS[label],
            delivered_at=delivered_at,
            recipients=planned_recipients(post),
        )
        for label in labels(post)
    ]


def published_labels(post: ChannelPost) -> tuple[str, ...]:
    """24 h and 72 h, once the platform gave the post's id. A post without one cannot be read:
    an Instagram post found PUBLISHED through its container, a TikTok post only its creator
    may see (SELF_ONLY, which unaudited apps must use)."""
    return (H24, H72) if post.post_id else ()


def planned_recipients(post: ChannelPost) -> int | None:
    """automedia's own count of sends (HubSpot email); the platforms count the rest."""
    sent = (post.details.get("summary") or {}).get("sent")
    return int(sent) if isinstance(sent, int) else None


def content_type(post: ChannelPost) -> str:
    return str((post.details.get("content") or {}).get("type") or "")


# -- measuring -------------------------------------------------------------------------


Measure = Callable[[EffectReport, ChannelPost, datetime], Measurement]


def post_measured(*, report: EffectReport, now: datetime, measure: Measure) -> tuple[dict, str]:
    """The statistics of the report's publication, as `measure` reads them, and the comment;
    raises TransportError to retry later."""
    if report.post is None:
        raise TransportError("効果測定の対象の投稿が見つかりません", permanent=True)
    measured = measure(report, report.post, now)
    return measured.result, "\n".join([f"{PREFIX} ({report.label})", *measured.lines])


def effect_account(tenant: Tenant, channel: str) -> ChannelAccount:
    account = ChannelAccount.objects.select_related("tenant").filter(tenant=tenant, channel=channel).first()
    if account is None or not account.access_token:
        raise TransportError(f"{channel_label(channel)} のアカウントが設定されていません", permanent=True)
    return account


def measure_intro(report: EffectReport, channel: str, post_id: str, now: datetime) -> str:
    return (
        f"配信から {report.label.removesuffix('h')} 時間後の {channel_label(channel)} 集計です"
        f"（投稿ID: {post_id}、{fmt_jst(now)} 時点の累計）。"
    )


def figure(value: float | None, unit: str) -> str:
    if value is None:
        return MISSING
    return f"{value:,} {unit}" if isinstance(value, int) else f"{value:,.1f} {unit}"


def missing_note(channel: str) -> str:
    return (
        f"※ {MISSING}: {channel_label(channel)} がこの数値を返しませんでした（まだ集計されていない、"
        "またはこの投稿では提供されていない）。0 という意味ではありません。"
    )

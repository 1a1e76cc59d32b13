"""Instagram's effect measurement: the media's insights (InstagramTransport.media_insights)."""

from __future__ import annotations

from datetime import datetime

from deliveries.channels.instagram.transport import InstagramTransport
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.platform_effects import (
    H24,
    MISSING,
    Measurement,
    content_type,
    effect_account,
    figure,
    measure_intro,
    missing_note,
    post_measured,
    post_reports,
    published_labels,
)
from deliveries.channels.platform_transport import PlatformError
from deliveries.models import ContentTask, EffectReport

# (metric, label, unit); a reel adds its average watch time (milliseconds). Metrics Meta
# deprecated are never asked: impressions, plays, clips_replays_count,
# ig_reels_aggregated_all_plays_count, video_views.
IG_METRICS = [
    ("views", "閲覧数（views）", "回"),
    ("reach", "リーチ（見たアカウント数）", "人"),
    ("likes", "いいね", "件"),
    ("comments", "コメント", "件"),
    ("shares", "シェア", "件"),
    ("saved", "保存", "件"),
    ("total_interactions", "反応の合計（いいね・コメント・保存・シェアなど）", "件"),
]
IG_REEL_WATCH = "ig_reels_avg_watch_time"


def planned(*, task: ContentTask, delivered_at: datetime, outcome: dict) -> list[EffectReport]:
    return post_reports(task=task, delivered_at=delivered_at, labels=published_labels)


def measured(*, report: EffectReport, now: datetime) -> tuple[dict, str]:
    return post_measured(report=report, now=now, measure=measure)


def measure(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    account = effect_account(report.tenant, ChannelAccount.Channel.INSTAGRAM)
    ig = InstagramTransport(token=account.access_token)
    try:
        permalink = post.permalink or _ig_permalink(ig, post.post_id)
        metrics = _ig_metrics(post)
        try:
            figures = ig.media_insights(post.post_id, metrics)
        except PlatformError as exc:
            # Refused, neither auth nor transient: a metric this media does not support (which
            # metrics each media type takes is not confirmed), a deleted media, or no
            # `instagram_business_manage_insights` permission: the Backlog comment gives Meta's message.
            if exc.auth or not exc.permanent:
                raise
            return _ig_unavailable(report, post, permalink, exc, now)
    finally:
        ig.close()
    result = {"media_id": post.post_id, "permalink": permalink, "metrics": figures}
    return Measurement(result, _ig_lines(report, post, permalink, figures, now))


def _ig_metrics(post: ChannelPost) -> list[str]:
    names = [name for name, _, _ in IG_METRICS]
    return names + [IG_REEL_WATCH] if content_type(post) == "reel" else names


def _ig_permalink(ig: InstagramTransport, media_id: str) -> str:
    try:
        return ig.permalink(media_id)
    except PlatformError:
        return ""  # the figures matter more; the comment says the link is unknown


def _ig_lines(
    report: EffectReport, post: ChannelPost, permalink: str, figures: dict, now: datetime
) -> list[str]:
    lines = [measure_intro(report, "instagram", post.post_id, now), f"- パーマリンク: {permalink or '不明'}"]
    lines += [f"- {label}: {figure(figures.get(name), unit)}" for name, label, unit in IG_METRICS]
    if IG_REEL_WATCH in figures:
        watch = figures[IG_REEL_WATCH]
        lines.append(f"- 平均視聴時間: {figure(None if watch is None else watch / 1000, '秒')}")
    if any(value is None for value in figures.values()):
        lines.append(missing_note("instagram"))
    if report.label == H24:  # insights "can be delayed up to 48 hours" (the insights reference)
        lines.append("※ Instagram の数値は最大 48 時間遅れて反映されることがあります。")
    return lines


def _ig_unavailable(
    report: EffectReport, post: ChannelPost, permalink: str, exc: PlatformError, now: datetime
) -> Measurement:
    result = {"media_id": post.post_id, "permalink": permalink, "unavailable": exc.message}
    lines = [
        measure_intro(report, "instagram", post.post_id, now),
        f"- パーマリンク: {permalink or '不明'}",
        f"- 統計: {MISSING}（Instagram が統計を返しませんでした。{exc.message}）",
    ]
    return Measurement(result, lines)

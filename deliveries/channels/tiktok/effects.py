"""TikTok's effect measurement: the video's counts (TikTokTransport.video_query)."""

from __future__ import annotations

from datetime import datetime

from core.transport import TransportError
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.channels.platform_effects import (
    MISSING,
    Measurement,
    effect_account,
    figure,
    measure_intro,
    missing_note,
    post_measured,
    post_reports,
    published_labels,
)
from deliveries.channels.tiktok.tokens import tiktok_access_token
from deliveries.channels.tiktok.transport import TikTokTransport
from deliveries.channels.token_upkeep import RefreshBusy, RefreshFailed
from deliveries.models import ContentTask, EffectReport

TT_FIELDS = [
    ("view_count", "再生数", "回"),
    ("like_count", "いいね", "件"),
    ("comment_count", "コメント", "件"),
    ("share_count", "シェア", "件"),
]


def planned(*, task: ContentTask, delivered_at: datetime, outcome: dict) -> list[EffectReport]:
    return post_reports(task=task, delivered_at=delivered_at, labels=published_labels)


def measured(*, report: EffectReport, now: datetime) -> tuple[dict, str]:
    return post_measured(report=report, now=now, measure=measure)


def measure(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    account = effect_account(report.tenant, ChannelAccount.Channel.TIKTOK)
    try:
        token = tiktok_access_token(account, now=now)
    except RefreshBusy as exc:
        raise TransportError("TikTok のトークンを別の処理が更新中です", permanent=False) from exc
    except RefreshFailed as exc:
        raise TransportError(f"認証エラー: {exc.reason}", permanent=True, auth=True) from exc
    tt = TikTokTransport(token=token)
    try:
        videos = tt.video_query([post.post_id])
    finally:
        tt.close()
    video = next((v for v in videos if str(v.get("id")) == post.post_id), None)
    return Measurement({"video_id": post.post_id, "video": video}, _tt_lines(report, post, video, now))


def _tt_lines(report: EffectReport, post: ChannelPost, video: dict | None, now: datetime) -> list[str]:
    link = (video or {}).get("share_url") or post.permalink
    lines = [measure_intro(report, "tiktok", post.post_id, now), f"- URL: {link or '不明'}"]
    if video is None:
        lines.append(
            f"- 統計: {MISSING}（TikTok がこの動画を返しませんでした。削除・非公開にされたか、"
            "アカウントの権限に video.list がない可能性があります）"
        )
        return lines
    figures = {name: video.get(name) for name, _, _ in TT_FIELDS}
    figures = {k: v if isinstance(v, int) and not isinstance(v, bool) else None for k, v in figures.items()}
    lines += [f"- {label}: {figure(figures[name], unit)}" for name, label, unit in TT_FIELDS]
    if any(value is None for value in figures.values()):
        lines.append(missing_note("tiktok"))
    return lines

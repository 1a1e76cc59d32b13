"""Effect measurement of Instagram / TikTok / HubSpot publications (LINE: effects.py).

effects.py plans, claims and runs the reports and posts the Backlog comment; this module
says which reports a finished `ChannelPost` gets and measures one of them.

Each platform fact below names the vendor page it comes from.

- Instagram: `GET /{ig-media-id}/insights?metric=…` on the media id `media_publish`
  returned (`ChannelPost.post_id`), with the permalink saved at publish time.
  Source: https://developers.facebook.com/docs/instagram-platform/reference/instagram-media/insights
  - Asked: views, reach, likes, comments, shares, saved, total_interactions; reels also
    ig_reels_avg_watch_time (milliseconds). Never asked: impressions, plays,
    clips_replays_count, ig_reels_aggregated_all_plays_count (deprecated in v22.0, for all
    versions from 2025-04-21) and video_views (deprecated).
  - "If insights data you are requesting does not exist or is currently unavailable, the
    API returns an empty data set instead of 0", and data "can be delayed up to 48
    hours": a figure Meta leaves out is shown as 集計なし, never as 0.
  - Which metric each media type accepts (image / carousel / reel) is UNCONFIRMED; a
    metric a media does not support, a deleted media or a missing permission
    (`instagram_business_manage_insights`) is refused without being an auth or transient
    error: the comment then says the statistics are unavailable, with Meta's message.
  - A publication whose media id was never received (PUBLISHED read from the container;
    third-party: https://github.com/trypostit/trypost/issues/281) cannot be measured: no
    report is planned.
- TikTok: `POST /v2/video/query/?fields=id,share_url,view_count,like_count,comment_count,
  share_count` with `{"filters": {"video_ids": [id]}}` on the id `status/fetch` returned
  in `publicaly_available_post_id`. Scope `video.list`, at most 20 ids, 600 requests a
  minute; only the user's own videos come back.
  Sources: https://developers.tiktok.com/doc/tiktok-api-v1-video-query (v1; it names v2),
  https://developers.tiktok.com/docs/en/tiktok-api-v2-rate-limit, and the field names of
  the tiktok_rust crate (docs.rs). The v2 request shape is UNCONFIRMED against TikTok's
  own v2 page, and so is whether photo posts are returned.
  - A post without a public id (SELF_ONLY, which unaudited apps must use:
    https://developers.tiktok.com/doc/content-sharing-guidelines/) cannot be queried: no
    report is planned. A video TikTok does not return (deleted, made private) gets a
    comment saying so.
- HubSpot: automedia knows no statistics endpoint for single-send email (only a
  send-status endpoint, itself UNCONFIRMED, which reports the send's state, not opens
  or clicks). So an email publication gets ONE report (24 h) with automedia's own count
  of accepted sends, saying that opens and clicks are not read from HubSpot. HubSpot's
  `GET /marketing/v3/emails/statistics/list` is not used (UNCONFIRMED), and it counts
  every send of an email id, not this task's. CRM notes have no statistics: no report.

Errors are handled as LINE's (effects._failed: again an hour later, given up after 5
attempts), token-expired and rate limits included, except the Instagram refusals above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.channels.base import TransportError
from deliveries.channels.instagram import InstagramTransport
from deliveries.channels.platform import PlatformError
from deliveries.channels.tiktok import TikTokTransport
from deliveries.models import ChannelAccount, ChannelPost, EffectReport
from deliveries.tokens import RefreshBusy, RefreshFailed, tiktok_access_token

H24, H72 = EffectReport.Label.H24, EffectReport.Label.H72
MISSING = "集計なし"
# Not Channel.choices: those follow the admin's language, Backlog comments do not.
LABELS = {"instagram": "Instagram", "tiktok": "TikTok", "hubspot": "HubSpot"}

# (metric, label, unit); a reel adds its average watch time (milliseconds).
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
TT_FIELDS = [
    ("view_count", "再生数", "回"),
    ("like_count", "いいね", "件"),
    ("comment_count", "コメント", "件"),
    ("share_count", "シェア", "件"),
]


@dataclass
class Measurement:
    """What a report stores (`result`) and the comment's lines after its first line."""

    result: dict
    lines: list[str]


# -- planning ------------------------------------------------------------------------


def planned_labels(post: ChannelPost) -> tuple[str, ...]:
    """The report points of a finished publication; () when it has nothing to measure."""
    if post.channel == ChannelAccount.Channel.HUBSPOT:
        return (H24,) if _content_type(post) == "email" else ()
    if post.channel in (ChannelAccount.Channel.INSTAGRAM, ChannelAccount.Channel.TIKTOK) and post.post_id:
        return (H24, H72)
    return ()


def planned_recipients(post: ChannelPost) -> int | None:
    """automedia's own count of sends (HubSpot email); the platforms count the rest."""
    sent = (post.details.get("summary") or {}).get("sent")
    return int(sent) if isinstance(sent, int) else None


def _content_type(post: ChannelPost) -> str:
    return str((post.details.get("content") or {}).get("type") or "")


# -- measuring -------------------------------------------------------------------------


def channel_measure(*, report: EffectReport, now: datetime) -> Measurement:
    """Read the statistics of the report's publication; raises TransportError to retry later."""
    if report.post is None:
        raise TransportError("効果測定の対象の投稿が見つかりません", permanent=True)
    return MEASURES[report.channel](report, report.post, now)


def _account(tenant: Tenant, channel: str) -> ChannelAccount:
    account = ChannelAccount.objects.select_related("tenant").filter(tenant=tenant, channel=channel).first()
    if account is None or not account.access_token:
        raise TransportError(f"{LABELS[channel]} のアカウントが設定されていません", permanent=True)
    return account


def _intro(report: EffectReport, channel: str, post_id: str, now: datetime) -> str:
    return (
        f"配信から {report.label.removesuffix('h')} 時間後の {LABELS[channel]} 集計です"
        f"（投稿ID: {post_id}、{fmt_jst(now)} 時点の累計）。"
    )


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return MISSING
    return f"{value:,} {unit}" if isinstance(value, int) else f"{value:,.1f} {unit}"


def _missing_note(channel: str) -> str:
    return (
        f"※ {MISSING}: {LABELS[channel]} がこの数値を返しませんでした（まだ集計されていない、"
        "またはこの投稿では提供されていない）。0 という意味ではありません。"
    )


# -- Instagram -------------------------------------------------------------------------


def _instagram(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    account = _account(report.tenant, ChannelAccount.Channel.INSTAGRAM)
    ig = InstagramTransport(token=account.access_token)
    try:
        permalink = post.permalink or _ig_permalink(ig, post.post_id)
        metrics = _ig_metrics(post)
        try:
            figures = ig.media_insights(post.post_id, metrics)
        except PlatformError as exc:
            if exc.auth or not exc.permanent:
                raise
            return _ig_unavailable(report, post, permalink, exc, now)
    finally:
        ig.close()
    result = {"media_id": post.post_id, "permalink": permalink, "metrics": figures}
    return Measurement(result, _ig_lines(report, post, permalink, figures, now))


def _ig_metrics(post: ChannelPost) -> list[str]:
    names = [name for name, _, _ in IG_METRICS]
    return names + [IG_REEL_WATCH] if _content_type(post) == "reel" else names


def _ig_permalink(ig: InstagramTransport, media_id: str) -> str:
    try:
        return ig.permalink(media_id)
    except PlatformError:
        return ""  # the figures matter more; the comment says the link is unknown


def _ig_lines(
    report: EffectReport, post: ChannelPost, permalink: str, figures: dict, now: datetime
) -> list[str]:
    lines = [_intro(report, "instagram", post.post_id, now), f"- パーマリンク: {permalink or '不明'}"]
    lines += [f"- {label}: {_figure(figures.get(name), unit)}" for name, label, unit in IG_METRICS]
    if IG_REEL_WATCH in figures:
        watch = figures[IG_REEL_WATCH]
        lines.append(f"- 平均視聴時間: {_figure(None if watch is None else watch / 1000, '秒')}")
    if any(value is None for value in figures.values()):
        lines.append(_missing_note("instagram"))
    if report.label == H24:
        lines.append("※ Instagram の数値は最大 48 時間遅れて反映されることがあります。")
    return lines


def _ig_unavailable(
    report: EffectReport, post: ChannelPost, permalink: str, exc: PlatformError, now: datetime
) -> Measurement:
    result = {"media_id": post.post_id, "permalink": permalink, "unavailable": exc.message}
    lines = [
        _intro(report, "instagram", post.post_id, now),
        f"- パーマリンク: {permalink or '不明'}",
        f"- 統計: {MISSING}（Instagram が統計を返しませんでした。{exc.message}）",
    ]
    return Measurement(result, lines)


# -- TikTok ------------------------------------------------------------------------------


def _tiktok(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    account = _account(report.tenant, ChannelAccount.Channel.TIKTOK)
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
    lines = [_intro(report, "tiktok", post.post_id, now), f"- URL: {link or '不明'}"]
    if video is None:
        lines.append(
            f"- 統計: {MISSING}（TikTok がこの動画を返しませんでした。削除・非公開にされたか、"
            "アカウントの権限に video.list がない可能性があります）"
        )
        return lines
    figures = {name: video.get(name) for name, _, _ in TT_FIELDS}
    figures = {k: v if isinstance(v, int) and not isinstance(v, bool) else None for k, v in figures.items()}
    lines += [f"- {label}: {_figure(figures[name], unit)}" for name, label, unit in TT_FIELDS]
    if any(value is None for value in figures.values()):
        lines.append(_missing_note("tiktok"))
    return lines


# -- HubSpot -----------------------------------------------------------------------------


def _hubspot(report: EffectReport, post: ChannelPost, now: datetime) -> Measurement:
    """No HubSpot call: the reference gives no statistics endpoint for single-send email."""
    summary = post.details.get("summary") or {}
    email_id = str(summary.get("post_id") or (post.details.get("content") or {}).get("email_id") or "")
    sent = planned_recipients(post)
    lines = [
        f"配信から {report.label.removesuffix('h')} 時間後の HubSpot 集計です（メールID: {email_id}）。",
        f"- 送信数: {_figure(sent, '件')}（automedia の送信記録。sendId ごとに 1 通）",
        f"- 開封・クリック: {MISSING}（automedia は HubSpot のメール統計を読み込んでいません。"
        "HubSpot のマーケティングメールの分析画面で確認してください）",
    ]
    return Measurement({"email_id": email_id, "sent": sent, "statistics": None}, lines)


MEASURES: dict[str, Callable[[EffectReport, ChannelPost, datetime], Measurement]] = {
    ChannelAccount.Channel.INSTAGRAM: _instagram,
    ChannelAccount.Channel.TIKTOK: _tiktok,
    ChannelAccount.Channel.HUBSPOT: _hubspot,
}

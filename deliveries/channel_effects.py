"""Effect measurement of Instagram / TikTok / HubSpot publications (LINE: effects.py).

effects.py plans, claims and runs the reports and posts the Backlog comment; this module
says which reports a finished `ChannelPost` gets and hands one to its channel
(deliveries/channels/<kind>/effects.py `measure`), with the lines those share.

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

from dataclasses import dataclass
from datetime import datetime

from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.channels.base import TransportError
from deliveries.channels.registry import channel_part
from deliveries.models import CHANNEL_LABELS, ChannelAccount, ChannelPost, EffectReport

H24, H72 = EffectReport.Label.H24, EffectReport.Label.H72
MISSING = "集計なし"


@dataclass
class Measurement:
    """What a report stores (`result`) and the comment's lines after its first line."""

    result: dict
    lines: list[str]


# -- planning ------------------------------------------------------------------------


def planned_labels(post: ChannelPost) -> tuple[str, ...]:
    """The report points of a finished publication; () when it has nothing to measure."""
    if post.channel == ChannelAccount.Channel.HUBSPOT:
        return (H24,) if content_type(post) == "email" else ()
    if post.channel in (ChannelAccount.Channel.INSTAGRAM, ChannelAccount.Channel.TIKTOK) and post.post_id:
        return (H24, H72)
    return ()


def planned_recipients(post: ChannelPost) -> int | None:
    """automedia's own count of sends (HubSpot email); the platforms count the rest."""
    sent = (post.details.get("summary") or {}).get("sent")
    return int(sent) if isinstance(sent, int) else None


def content_type(post: ChannelPost) -> str:
    return str((post.details.get("content") or {}).get("type") or "")


# -- measuring -------------------------------------------------------------------------


def channel_measure(*, report: EffectReport, now: datetime) -> Measurement:
    """Read the statistics of the report's publication; raises TransportError to retry later."""
    if report.post is None:
        raise TransportError("効果測定の対象の投稿が見つかりません", permanent=True)
    return channel_part(report.channel, "effects").measure(report, report.post, now)


def effect_account(tenant: Tenant, channel: str) -> ChannelAccount:
    account = ChannelAccount.objects.select_related("tenant").filter(tenant=tenant, channel=channel).first()
    if account is None or not account.access_token:
        raise TransportError(f"{CHANNEL_LABELS[channel]} のアカウントが設定されていません", permanent=True)
    return account


def measure_intro(report: EffectReport, channel: str, post_id: str, now: datetime) -> str:
    return (
        f"配信から {report.label.removesuffix('h')} 時間後の {CHANNEL_LABELS[channel]} 集計です"
        f"（投稿ID: {post_id}、{fmt_jst(now)} 時点の累計）。"
    )


def figure(value: float | None, unit: str) -> str:
    if value is None:
        return MISSING
    return f"{value:,} {unit}" if isinstance(value, int) else f"{value:,.1f} {unit}"


def missing_note(channel: str) -> str:
    return (
        f"※ {MISSING}: {CHANNEL_LABELS[channel]} がこの数値を返しませんでした（まだ集計されていない、"
        "またはこの投稿では提供されていない）。0 という意味ではありません。"
    )

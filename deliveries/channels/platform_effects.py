"""Effect measurement of Instagram / TikTok / HubSpot publications: what their effects
modules share (the reports of a finished `ChannelPost`, the comment's lines). effects.py
claims and runs the reports and posts the Backlog comment.

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

Errors are handled as LINE's (effects.py: again an hour later, given up after a few
attempts), token-expired and rate limits included, except the Instagram refusals above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.channels.base import TransportError
from deliveries.channels.effects import OFFSETS, PREFIX
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import CHANNEL_LABELS, ContentTask, EffectReport

H24, H72 = EffectReport.Label.H24, EffectReport.Label.H72
MISSING = "集計なし"


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
    """24 h and 72 h, once the platform gave the post's id (a post without one cannot be read)."""
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

"""LINE's effect measurement: the per-unit statistics of a delivery and their Backlog comment.

Every push/multicast of a delivery carries `customAggregationUnits = [aggregation_unit(issue_key)]`.
24 h and 72 h after a delivery, its report reads that unit's statistics
(`GET /v2/bot/insight/message/event/aggregation`, `getStatisticsPerUnit` in insight.yml of
line/line-openapi, https://github.com/line/line-openapi). A figure is null when it is below 20
(privacy; https://developers.line.biz/ja/docs/messaging-api/unit-based-statistics-aggregation),
so the comment says so instead of printing 0; the per-unit overview has no `delivered`
(insight.yml), so the count comes from automedia's own DeliveryAttempt rows.
Claiming and retrying the reports: deliveries/channels/effect_reports.py.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from core.timeutil import JST
from core.transport import TransportError
from deliveries.channels.effect_reports import OFFSETS, PREFIX
from deliveries.models import ContentTask, DeliveryAttempt, EffectReport
from line.transport import MAX_AGGREGATION_DAYS, aggregation_unit, line_transport

NULL_TEXT = "集計なし（null）"
NULL_NOTE = (
    "※ 集計なし（null）: LINE は 20 人未満の場合は集計値を返しません（null）。0 人という意味ではありません。"
)
MAX_CLICK_LINES = 10


def planned(*, task: ContentTask, delivered_at: datetime, outcome: dict) -> list[EffectReport]:
    """24 h and 72 h after a delivery LINE accepted; its recipients are the run's count, or
    else counted from the chunks LINE accepted."""
    recipients = outcome.get("recipients")
    if recipients is None:
        sent = _attempts_sent(task)
        if not sent:
            return []
        recipients = sum(int(a.request_summary.get("recipients") or 0) for a in sent)
    return [
        EffectReport(
            tenant_id=task.tenant_id,
            task=task,
            unit=aggregation_unit(task.issue_key),
            label=label,
            due_at=delivered_at + offset,
            delivered_at=delivered_at,
            recipients=recipients,
        )
        for label, offset in OFFSETS.items()
    ]


def _attempts_sent(task: ContentTask) -> list[DeliveryAttempt]:
    """The chunks LINE accepted for the task's current approval (the delivery that just ended)."""
    return list(
        DeliveryAttempt.objects.filter(
            task=task,
            approval_seq=task.approval_seq,
            channel="line",
            correction__isnull=True,
            outcome__in=DeliveryAttempt.ACCEPTED,
        )
    )


def measured(*, report: EffectReport, now: datetime) -> tuple[dict, str]:
    """The statistics to store and the comment to post."""
    since, until = report_period(report)
    stats = _statistics(report, since, until)
    comment = format_effect_comment(
        report.label,
        stats.get("overview") or {},
        recipients=report.recipients,
        clicks=stats.get("clicks") or [],
        unit=report.unit,
        period=(since, until),
    )
    return stats, comment


def report_period(report: EffectReport) -> tuple[date, date]:
    """From the delivery day to the report's nominal day (UTC+9), at most 30 days apart."""
    since = report.delivered_at.astimezone(JST).date()
    until = (report.delivered_at + OFFSETS[report.label]).astimezone(JST).date()
    return since, min(until, since + timedelta(days=MAX_AGGREGATION_DAYS))


def _statistics(report: EffectReport, since: date, until: date) -> dict:
    token = report.tenant.line_channel_token
    if not token:
        raise TransportError("LINE チャネルアクセストークンが設定されていません", permanent=True)
    return line_transport(token).unit_statistics(unit=report.unit, since=since, until=until)


# -- the comment ----------------------------------------------------------------------


def format_effect_comment(
    label: str,
    overview: dict,
    *,
    recipients: int | None = None,
    clicks: list[dict] | None = None,
    unit: str = "",
    period: tuple[date, date] | None = None,
) -> str:
    """The Backlog comment: a machine-readable first line, then the figures in Japanese."""
    lines = [f"{PREFIX} ({label})", _intro(label, unit, period)]
    lines.append(f"- 配信数: {_delivered(recipients)}")
    lines.append(f"- ユニークインプレッション（開封した人数）: {_figure(overview.get('uniqueImpression'))}")
    lines.append(f"- ユニーククリック（URL を開いた人数）: {_figure(overview.get('uniqueClick'))}")
    lines.extend(_media_lines(overview))
    lines.extend(_click_lines(clicks or []))
    if _has_null(overview, clicks or []):
        lines.append(NULL_NOTE)
    return "\n".join(lines)


def _intro(label: str, unit: str, period: tuple[date, date] | None) -> str:
    text = f"配信から {label.removesuffix('h')} 時間後の LINE 集計です"
    details = []
    if unit:
        details.append(f"集計単位: {unit}")
    if period:
        details.append(f"集計期間: {period[0]:%Y-%m-%d}〜{period[1]:%Y-%m-%d} (JST)")
    return text + (f"（{'、'.join(details)}）。" if details else "。")


def _delivered(recipients: int | None) -> str:
    if recipients is None:
        return "不明（LINE の集計 API は配信数を返しません）"
    return (
        f"{recipients} 件（automedia の送信記録による配信先の数。グループ宛ては 1 グループを 1 件と数えます。"
        "LINE の集計 API は配信数を返しません）"
    )


def _figure(value: int | None, unit: str = "人") -> str:
    return NULL_TEXT if value is None else f"{value:,} {unit}"


def _media_lines(overview: dict) -> list[str]:
    """Only for messages with video or audio: for others LINE has nothing to report."""
    played, full = overview.get("uniqueMediaPlayed"), overview.get("uniqueMediaPlayed100Percent")
    if played is None and full is None:
        return []
    return [
        f"- 動画・音声を再生した人数: {_figure(played)}",
        f"- 動画・音声を最後まで再生した人数: {_figure(full)}",
    ]


def _click_lines(clicks: list[dict]) -> list[str]:
    if not clicks:
        return []
    lines = ["URL 別クリック:"]
    for click in clicks[:MAX_CLICK_LINES]:
        lines.append(
            f"- {click.get('url', '')}: クリック {_figure(click.get('click'), '回')}、"
            f"ユニーク {_figure(click.get('uniqueClick'))}"
        )
    if len(clicks) > MAX_CLICK_LINES:
        lines.append(f"- ほか {len(clicks) - MAX_CLICK_LINES} 件")
    return lines


def _has_null(overview: dict, clicks: list[dict]) -> bool:
    shown = [overview.get("uniqueImpression"), overview.get("uniqueClick")]
    if _media_lines(overview):
        shown += [overview.get("uniqueMediaPlayed"), overview.get("uniqueMediaPlayed100Percent")]
    for click in clicks[:MAX_CLICK_LINES]:
        shown += [click.get("click"), click.get("uniqueClick")]
    return any(value is None for value in shown)

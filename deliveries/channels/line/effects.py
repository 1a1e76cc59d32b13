"""LINE's effect measurement: the per-unit statistics of a delivery and their Backlog comment.

Planning, claiming and retrying the reports: deliveries/effects.py (its docstring has the
facts about LINE's per-unit statistics).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from core.timeutil import JST
from deliveries.channels.base import TransportError
from deliveries.channels.line.transport import MAX_AGGREGATION_DAYS, line_transport
from deliveries.effects import OFFSETS, PREFIX
from deliveries.models import EffectReport

NULL_TEXT = "集計なし（null）"
NULL_NOTE = (
    "※ 集計なし（null）: LINE は 20 人未満の場合は集計値を返しません（null）。0 人という意味ではありません。"
)
MAX_CLICK_LINES = 10


def line_measure(*, report: EffectReport, now: datetime) -> tuple[dict, str]:
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

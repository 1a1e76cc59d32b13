"""Effect measurement: 24 h / 72 h after a LINE delivery, per-unit statistics go to Backlog."""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta

import pytest
import time_machine

from deliveries.channels import effect_reports
from deliveries.channels.effect_reports import effect_report_rows, effect_reports_run
from deliveries.channels.line.effects import format_effect_comment
from deliveries.models import ContentTask, EffectReport
from line.transport import LineTransport
from tests.helpers.backlog import texts
from tests.helpers.deliveries import MULTICAST, fire

INSIGHT = "/v2/bot/insight/message/event/aggregation"
PREFIX_24H = "[automedia] 効果測定 (24h)"
PREFIX_72H = "[automedia] 効果測定 (72h)"


@pytest.fixture
def delivered(approved, line) -> str:
    """An issue delivered by multicast to 3 contacts at 2026-12-10 10:00 JST (unit ACME_1)."""
    key = approved()
    assert fire(key) == "delivered"
    return key


def delivered_at(key: str) -> datetime:
    return ContentTask.objects.get(issue_key=key).delivered_at


def run_at(when: datetime) -> int:
    with time_machine.travel(when, tick=True):
        return effect_reports_run()


def insight_requests(line) -> list:
    return [r for r in line.requests if r.path == INSIGHT]


def effect_comments(fake_backlog, key: str) -> list[str]:
    return [t for t in texts(fake_backlog, key) if t.startswith("[automedia] 効果測定")]


def test_it_plans_a_24h_and_a_72h_report_after_a_line_delivery(delivered):
    at = delivered_at(delivered)

    reports = EffectReport.objects.filter(task__issue_key=delivered).order_by("due_at")

    assert [(r.label, r.due_at - at, r.unit, r.recipients) for r in reports] == [
        ("24h", timedelta(hours=24), "ACME_1", 3),
        ("72h", timedelta(hours=72), "ACME_1", 3),
    ]
    assert all(r.done_at is None and r.delivered_at == at for r in reports)


def test_it_plans_idempotently(delivered):
    task = ContentTask.objects.get(issue_key=delivered)

    rows = effect_report_rows(task=task, delivered_at=task.delivered_at)
    EffectReport.objects.bulk_create(rows, ignore_conflicts=True)  # as the write-back plans them

    assert EffectReport.objects.filter(task=task).count() == 2


def test_it_plans_nothing_for_a_failed_delivery(approved, line):
    key = approved()
    line.fail_next(400, path_prefix=MULTICAST)

    assert fire(key) == "failed"
    assert not EffectReport.objects.exists()


def test_it_runs_nothing_before_24_hours(delivered, fake_backlog, line):
    line.set_unit_stats("ACME_1", {"uniqueImpression": 25, "uniqueClick": 21})

    assert run_at(delivered_at(delivered) + timedelta(hours=23, minutes=59)) == 0

    assert insight_requests(line) == []
    assert effect_comments(fake_backlog, delivered) == []


def test_it_comments_the_24h_statistics_at_24_hours(delivered, fake_backlog, line):
    line.set_unit_stats("ACME_1", {"uniqueImpression": 25, "uniqueClick": 21})

    assert run_at(delivered_at(delivered) + timedelta(hours=24)) == 1

    [request] = insight_requests(line)
    assert (request.method, request.status) == ("GET", 200)
    assert request.query == {"customAggregationUnit": ["ACME_1"], "from": ["20261210"], "to": ["20261211"]}
    assert request.headers["authorization"] == "Bearer line-channel-token"
    [comment] = effect_comments(fake_backlog, delivered)
    assert comment.startswith(PREFIX_24H + "\n")
    assert "集計期間: 2026-12-10〜2026-12-11 (JST)" in comment
    assert "- 配信数: 3 件（automedia の送信記録" in comment
    assert "- ユニークインプレッション（開封した人数）: 25 人" in comment
    assert "- ユニーククリック（URL を開いた人数）: 21 人" in comment
    assert "null" not in comment
    report = EffectReport.objects.get(task__issue_key=delivered, label="24h")
    assert report.done_at is not None and report.result["overview"]["uniqueImpression"] == 25


def test_it_comments_the_72h_statistics_at_72_hours(delivered, fake_backlog, line):
    at = delivered_at(delivered)
    line.set_unit_stats("ACME_1", {"uniqueImpression": 25, "uniqueClick": 21})
    assert run_at(at + timedelta(hours=24)) == 1
    line.set_unit_stats("ACME_1", {"uniqueImpression": 40, "uniqueClick": 30})

    assert run_at(at + timedelta(hours=71, minutes=59)) == 0
    assert run_at(at + timedelta(hours=72)) == 1

    assert insight_requests(line)[-1].query["to"] == ["20261213"]
    comments = effect_comments(fake_backlog, delivered)
    assert [c.splitlines()[0] for c in comments] == [PREFIX_24H, PREFIX_72H]
    assert "- ユニークインプレッション（開封した人数）: 40 人" in comments[1]


def test_it_explains_null_figures_instead_of_printing_zero(delivered, fake_backlog, line):
    line.set_unit_stats("ACME_1", {"uniqueImpression": 22, "uniqueClick": None})

    run_at(delivered_at(delivered) + timedelta(hours=24))

    [comment] = effect_comments(fake_backlog, delivered)
    assert "- ユニーククリック（URL を開いた人数）: 集計なし（null）" in comment
    assert "LINE は 20 人未満の場合は集計値を返しません（null）" in comment
    assert "ユニーククリック（URL を開いた人数）: 0" not in comment


def test_it_comments_all_null_for_a_unit_line_knows_nothing_about(delivered, fake_backlog, line):
    run_at(delivered_at(delivered) + timedelta(hours=24))

    [comment] = effect_comments(fake_backlog, delivered)
    assert comment.count("集計なし（null）") == 3  # impressions, clicks, and the note


def test_it_retries_an_hour_later_when_line_answers_500(delivered, fake_backlog, line):
    line.set_unit_stats("ACME_1", {"uniqueImpression": 25, "uniqueClick": 21})
    line.fail_next(500, path_prefix=INSIGHT)
    first = delivered_at(delivered) + timedelta(hours=24)

    assert run_at(first) == 0

    report = EffectReport.objects.get(task__issue_key=delivered, label="24h")
    assert (report.attempts, report.done_at) == (1, None)
    assert "サーバーエラー（500）" in report.last_error
    assert abs(report.due_at - (first + timedelta(hours=1))) < timedelta(seconds=5)
    assert effect_comments(fake_backlog, delivered) == []
    assert run_at(first + timedelta(minutes=30)) == 0
    assert len(insight_requests(line)) == 1
    assert run_at(first + timedelta(hours=1, seconds=5)) == 1
    assert len(effect_comments(fake_backlog, delivered)) == 1


def test_it_retries_when_backlog_rejects_the_comment(delivered, fake_backlog, line):
    fake_backlog.fail_next(503, method="POST", path_prefix=f"/api/v2/issues/{delivered}/comments")
    first = delivered_at(delivered) + timedelta(hours=24)

    assert run_at(first) == 0
    report = EffectReport.objects.get(task__issue_key=delivered, label="24h")
    assert report.attempts == 1 and "Backlog API エラー (HTTP 503)" in report.last_error

    assert run_at(first + timedelta(hours=1, seconds=5)) == 1
    assert len(effect_comments(fake_backlog, delivered)) == 1


def test_it_gives_up_after_5_failures_with_a_warning(delivered, fake_backlog, line, caplog):
    line.fail_next(500, count=5, path_prefix=INSIGHT)
    when = delivered_at(delivered) + timedelta(hours=24)

    with caplog.at_level(logging.WARNING, logger="deliveries.channels.effect_reports"):
        for attempt in range(5):
            assert run_at(when + timedelta(hours=attempt, seconds=5 * attempt)) == 0

    report = EffectReport.objects.get(task__issue_key=delivered, label="24h")
    assert (report.attempts, report.done_at) == (5, None)
    assert "given up after 5 attempts" in caplog.text
    assert run_at(when + timedelta(hours=10)) == 0  # the 72h report is not due yet
    assert len(insight_requests(line)) == 5
    assert effect_comments(fake_backlog, delivered) == []


def test_it_does_not_comment_twice_when_run_twice(delivered, fake_backlog, line):
    when = delivered_at(delivered) + timedelta(hours=24)

    assert run_at(when) == 1
    assert run_at(when + timedelta(minutes=10)) == 0

    assert len(effect_comments(fake_backlog, delivered)) == 1
    assert len(insight_requests(line)) == 1


def test_a_report_claimed_by_another_worker_is_left_alone(delivered, fake_backlog, line):
    when = delivered_at(delivered) + timedelta(hours=24)
    report = EffectReport.objects.get(task__issue_key=delivered, label="24h")
    assert effect_reports._claim(report.pk, report.due_at, when) is not None

    assert effect_reports._claim(report.pk, report.due_at, when) is None
    assert run_at(when + timedelta(minutes=5)) == 0
    assert run_at(when + effect_reports.LEASE) == 1  # the lease expired: the worker died


def test_it_sends_yyyymmdd_dates_and_refuses_more_than_30_days(line):
    transport = LineTransport(token="line-channel-token")

    transport.unit_statistics(unit="ACME_1", since=date(2026, 12, 1), until=date(2026, 12, 31))
    with pytest.raises(ValueError):
        transport.unit_statistics(unit="ACME_1", since=date(2026, 12, 1), until=date(2027, 1, 1))

    [request] = insight_requests(line)
    assert request.query == {"customAggregationUnit": ["ACME_1"], "from": ["20261201"], "to": ["20261231"]}
    transport.close()


def test_it_formats_media_and_per_url_clicks_when_line_reports_them():
    overview = {
        "uniqueImpression": 40,
        "uniqueClick": 30,
        "uniqueMediaPlayed": 25,
        "uniqueMediaPlayed100Percent": None,
    }
    clicks = [{"seq": 1, "url": "https://example.com/", "click": 35, "uniqueClick": 25}]

    comment = format_effect_comment("72h", overview, recipients=1200, clicks=clicks)

    assert comment.splitlines()[:2] == [PREFIX_72H, "配信から 72 時間後の LINE 集計です。"]
    assert "- 配信数: 1200 件" in comment
    assert "- 動画・音声を再生した人数: 25 人" in comment
    assert "- 動画・音声を最後まで再生した人数: 集計なし（null）" in comment
    assert "- https://example.com/: クリック 35 回、ユニーク 25 人" in comment
    assert comment.endswith("0 人という意味ではありません。")


def test_it_registers_the_effect_reports_job_every_ten_minutes(db):
    from django_q.models import Schedule

    job = Schedule.objects.get(name="automedia-effect-reports")
    assert (job.func, job.schedule_type, job.minutes) == ("deliveries.tasks.effect_reports", "I", 10)

"""A Backlog outage around a delivery: the re-read before sending and the write-back after it
are retried within seconds on Backlog's own budget; the channel keeps all its retries.

The fakes run on loopback; respx stands between automedia and the fake Backlog to make it
answer 503 during a window of (time-machine) time, and lets everything else through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import httpx
import pytest
import respx
import time_machine
from django.utils import timezone

from core import metrics
from core.retry import BACKLOG_BUDGET, BACKLOG_CAP, BACKLOG_JITTER
from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule
from deliveries.publish.delivery import delivery_run
from deliveries.publish.scheduler import schedules_claim
from deliveries.services import schedule_upsert
from tests.helpers.backlog import texts
from tests.helpers.deliveries import DUE, MULTICAST, fire, make_schedule, write_backs, written_back

pytestmark = pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx

LONGEST_WAIT = BACKLOG_CAP * (1 + BACKLOG_JITTER)  # seconds


@contextmanager
def backlog_down(fake_backlog, *, start: datetime, end: datetime, method: str | None = None) -> Iterator:
    """Backlog answers 503 from `start` to `end` (to `method` only, if given); the rest passes."""

    def answer(request: httpx.Request):
        if start <= timezone.now() < end and method in (None, request.method):
            return httpx.Response(503, json={"errors": [{"message": "Service Unavailable", "code": 0}]})
        return request  # respx: pass it through to the fake

    with respx.mock(assert_all_called=False) as router:
        router.route(url__startswith=fake_backlog.base_url).mock(side_effect=answer)
        router.route().pass_through()
        yield router


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def run_until_ended(key: str, *, limit: timedelta = timedelta(minutes=5)) -> list[tuple[datetime, str, int]]:
    """The scheduler's part: claim the row each time it is due and run it, until it is gone.
    Returns (when, result, the row's channel retries afterwards) per run."""
    runs = []
    while (schedule := schedule_of(key)) is not None and schedule.due_at < DUE + limit:
        at = schedule.due_at + timedelta(seconds=0.01)
        with time_machine.travel(at, tick=True):
            if schedule.stage == DeliverySchedule.Stage.WRITEBACK:  # the write-backs' queue's
                result = write_backs().get(schedule.pk, "not claimed")
            else:
                [(schedule_id, token)] = schedules_claim(now=timezone.now())
                result = written_back(schedule_id, delivery_run(schedule_id=schedule_id, token=token))
        left = schedule_of(key)
        runs.append((at, result, left.attempts if left and left.stage == "deliver" else 0))
    return runs


def gaps(runs: list[tuple[datetime, str, int]]) -> list[float]:
    return [(b[0] - a[0]).total_seconds() for a, b in zip(runs, runs[1:], strict=False)]


@pytest.mark.parametrize("outage_began", [0, -5, -15], ids=["at-due", "5s-before", "15s-before"])
def test_it_sends_within_30_seconds_of_due_through_a_20_second_outage(
    approved, fake_backlog, line, outage_began
):
    key = approved()
    start = DUE + timedelta(seconds=outage_began)

    with backlog_down(fake_backlog, start=start, end=start + timedelta(seconds=20)):
        runs = run_until_ended(key)

    *retries, (_, last, _) = runs
    assert retries and all(result.startswith("backlog retry in ") for _, result, _ in retries)
    assert last == "delivered"
    assert [attempts for *_, attempts in runs] == [0] * len(runs)  # the channel's retries untouched
    assert max(gaps(runs)) <= LONGEST_WAIT + 0.1
    lateness = (ContentTask.objects.get(issue_key=key).delivered_at - DUE).total_seconds()
    assert lateness <= 30
    [sent] = DeliveryAttempt.objects.all()
    assert sent.outcome == "sent" and sent.request_summary["lateness_ms"] == pytest.approx(
        lateness * 1000, abs=1000
    )
    assert len(line.sent(MULTICAST)) == 1
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


@pytest.mark.parametrize(
    "fault",
    [
        httpx.Response(500),
        httpx.Response(503),
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
    ],
    ids=["500", "503", "connection-error", "timeout"],
)
def test_it_retries_each_kind_of_backlog_failure_within_a_second_or_so(approved, fake_backlog, line, fault):
    key = approved()

    with respx.mock(assert_all_called=False) as router:
        reread = router.get(url__startswith=f"{fake_backlog.base_url}/api/v2/issues/{key}").mock(
            side_effect=[fault]
        )
        router.route().pass_through()
        result = fire(key)

    schedule = schedule_of(key)
    assert result.startswith("backlog retry in ") and reread.call_count == 1  # no retry inside the call
    assert schedule.attempts == 0 and schedule.backlog_failing_since is not None
    waited = (schedule.due_at - schedule.backlog_failing_since).total_seconds()
    assert 0.75 <= waited <= 1.25
    assert not line.sent()


def test_it_retries_a_write_back_within_seconds_and_never_sends_again(approved, fake_backlog, line):
    key = approved()

    with backlog_down(fake_backlog, start=DUE, end=DUE + timedelta(seconds=20), method="PATCH"):
        runs = run_until_ended(key)

    results = [result for _, result, _ in runs]
    assert results[0] == "write-back retry" and results[-1] == "delivered"
    assert set(results[1:-1]) <= {"write-back retry"}
    assert max(gaps(runs)) <= LONGEST_WAIT + 0.1
    assert (runs[-1][0] - DUE).total_seconds() <= 20 + LONGEST_WAIT + 0.1
    assert len(line.sent(MULTICAST)) == 1
    assert sum(t.startswith("[automedia] 配信しました") for t in texts(fake_backlog, key)) == 1
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_backlog_trouble_leaves_the_channel_all_its_retries(approved, fake_backlog, line):
    key = approved()
    # Six failed re-reads: on the channel's ladder this would have been 30 s … 1 h and then
    # automediaエラー.
    fake_backlog.fail_next(503, count=6, method="GET")
    line.fail_next(500, path_prefix=MULTICAST)

    results = [fire(key) for _ in range(8)]

    assert all(r.startswith("backlog retry in ") for r in results[:6])
    assert results[6:] == ["retry in 30s", "delivered"]  # LINE's first retry, after all that
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_an_hour_of_backlog_trouble_is_still_retried_within_seconds(approved, fake_backlog, line):
    key = approved()
    DeliverySchedule.objects.filter(task__issue_key=key).update(
        backlog_failing_since=DUE - timedelta(hours=1)
    )
    fake_backlog.fail_next(503, method="GET")

    result = fire(key)

    schedule = schedule_of(key)
    assert result.startswith("backlog retry in ")
    assert (schedule.due_at - DUE).total_seconds() <= LONGEST_WAIT + 0.1
    assert schedule.attempts == 0 and schedule.backlog_failing_since == DUE - timedelta(hours=1)
    assert "HTTP 503" in schedule.last_error


def test_it_ends_in_error_without_sending_once_backlogs_budget_is_spent(approved, fake_backlog, line):
    key = approved()
    DeliverySchedule.objects.filter(task__issue_key=key).update(backlog_failing_since=DUE - BACKLOG_BUDGET)
    fake_backlog.fail_next(503, method="GET")  # the re-read

    with backlog_down(fake_backlog, start=DUE, end=DUE + timedelta(seconds=10), method="PATCH"):
        first = fire(key)
        outcome = schedule_of(key).outcome
        runs = run_until_ended(key)

    assert first == "write-back retry" and runs[-1][1] == "failed"
    assert outcome["ok"] is False and outcome["reason"].startswith("Backlog に 102 分間接続できず")
    assert not line.sent()
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert texts(fake_backlog, key)[-1].startswith(
        "[automedia] 配信できませんでした: Backlog に 102 分間接続できず"
    )


def test_it_waits_for_backlogs_rate_limit_reset_without_using_a_channel_retry(approved, fake_backlog, line):
    key = approved()
    reset = int(DUE.timestamp()) + 30  # X-RateLimit-Reset: UTC epoch seconds

    with respx.mock(assert_all_called=False) as router:
        router.get(url__startswith=f"{fake_backlog.base_url}/api/v2/issues/{key}").respond(
            429,
            headers={"X-RateLimit-Reset": str(reset)},
            json={"errors": [{"message": "Too Many Requests"}]},
        )
        router.route().pass_through()
        result = fire(key)

    schedule = schedule_of(key)
    assert result.startswith("backlog retry in ")
    assert schedule.due_at.timestamp() == pytest.approx(reset, abs=0.5)
    assert schedule.attempts == 0


def test_a_refusal_by_backlog_still_ends_the_delivery_at_once(approved, fake_backlog, line):
    key = approved()
    fake_backlog.fail_next(403, method="GET", path_prefix=f"/api/v2/issues/{key}")

    assert fire(key) == "failed"
    assert not line.sent()
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"


def test_it_measures_how_late_a_delivery_fired_once_through_backlog_retries(
    approved, fake_backlog, line, monkeypatch
):
    key = approved()
    fired = []
    monkeypatch.setattr(metrics, "fired", fired.append)

    with backlog_down(fake_backlog, start=DUE, end=DUE + timedelta(seconds=5)):
        runs = run_until_ended(key)

    assert len(runs) > 2 and runs[-1][1] == "delivered"
    assert fired == [pytest.approx(0.01, abs=0.5)]  # the first claim only, not each Backlog retry


def test_a_new_schedule_starts_backlogs_budget_afresh(db):
    schedule = make_schedule(attempts=2, backlog_failing_since=timezone.now() - timedelta(minutes=30))

    schedule_upsert(task=schedule.task, due_at=schedule.due_at, reason="approval")

    schedule.refresh_from_db()
    assert schedule.backlog_failing_since is None and schedule.attempts == 0

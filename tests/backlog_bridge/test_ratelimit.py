"""Pacing by Backlog's X-RateLimit-* headers, with respx: when a paced client waits, and how long."""

from __future__ import annotations

import httpx
import pytest
import respx

from backlog_bridge.client import BacklogClient, BacklogError, BacklogPaced
from backlog_bridge.ratelimit import MAX_PACING_WAIT, RESET_MARGIN, Pacer

pytestmark = pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx

BASE = "https://acme.backlog.jp"
NOW = 1_800_000_000.0


class Clock:
    """A clock that only moves when the pacer sleeps."""

    def __init__(self) -> None:
        self.now = NOW
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def backlog(clock):
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    return BacklogClient(base_url=BASE, api_key="secret-key", pacer=pacer)


@pytest.fixture
def mock():
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def limits(limit: int, remaining: int, reset: float) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(int(reset)),
    }


def test_it_does_not_wait_while_the_group_has_budget_left(backlog, mock, clock):
    route = mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1}, headers=limits(150, 100, NOW + 30))

    backlog.get_issue("ACME-1")
    backlog.get_issue("ACME-1")

    assert route.call_count == 2
    assert clock.slept == []


def test_it_waits_until_the_reset_when_remaining_hits_zero(backlog, mock, clock):
    times = []

    def answer(request):
        times.append(clock.now)
        return httpx.Response(201, json={"id": len(times)}, headers=limits(5, 0, NOW + 30))

    mock.post("/api/v2/issues/ACME-1/comments").mock(side_effect=answer)

    backlog.add_comment("ACME-1", "one")
    backlog.add_comment("ACME-1", "two")

    assert clock.slept == [30 + RESET_MARGIN]
    assert times == [NOW, NOW + 30 + RESET_MARGIN]


def test_it_leaves_the_reserve_to_the_other_users_of_the_key(clock, mock):
    pacer = Pacer(reserve=0.1, clock=clock, sleep=clock.sleep)
    backlog = BacklogClient(base_url=BASE, api_key="secret-key", pacer=pacer)
    mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1}, headers=limits(150, 15, NOW + 20))

    backlog.get_issue("ACME-1")
    backlog.get_issue("ACME-1")

    assert clock.slept == [20 + RESET_MARGIN]  # 15 left of 150 is the 10 % reserve


def test_it_paces_reads_and_updates_on_their_own_budgets(backlog, mock, clock):
    mock.post("/api/v2/issues/ACME-1/comments").respond(201, json={"id": 1}, headers=limits(60, 0, NOW + 40))
    mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1}, headers=limits(150, 149, NOW + 40))

    backlog.add_comment("ACME-1", "spent the updates")
    backlog.get_issue("ACME-1")  # reads are a separate group

    assert clock.slept == []
    backlog.add_comment("ACME-1", "waits")
    assert clock.slept == [40 + RESET_MARGIN]


def test_a_waiting_pacer_raises_a_429_and_waits_for_the_reset_before_the_next_call(backlog, mock, clock):
    route = mock.get("/api/v2/issues/ACME-1")
    route.side_effect = [
        httpx.Response(
            429, headers=limits(150, 0, NOW + 45), json={"errors": [{"message": "Too many", "code": 13}]}
        ),
        httpx.Response(200, json={"id": 1}, headers=limits(150, 149, NOW + 105)),
    ]

    with pytest.raises(BacklogError) as caught:
        backlog.get_issue("ACME-1")
    assert caught.value.status == 429 and clock.slept == []  # the call itself is not retried

    assert backlog.get_issue("ACME-1") == {"id": 1}
    assert route.call_count == 2
    assert clock.slept == [45 + RESET_MARGIN]


def test_a_pacer_without_sleep_refuses_a_call_whose_budget_is_spent_and_sends_nothing(clock, mock):
    backlog = BacklogClient(base_url=BASE, api_key="secret-key", pacer=Pacer(clock=clock))
    route = mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1}, headers=limits(150, 0, NOW + 30))
    backlog.get_issue("ACME-1")

    with pytest.raises(BacklogPaced) as caught:
        backlog.get_issue("ACME-1")

    assert route.call_count == 1 and clock.slept == []
    assert caught.value.retryable and caught.value.retry_after == 30 + RESET_MARGIN
    clock.now += 31  # the window restarted
    backlog.get_issue("ACME-1")
    assert route.call_count == 2


def test_it_sends_at_once_without_rate_limit_headers(backlog, mock, clock):
    route = mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1})

    backlog.get_issue("ACME-1")
    backlog.get_issue("ACME-1")

    assert route.call_count == 2 and clock.slept == []


def test_it_waits_at_most_two_minutes_for_a_reset_far_away(backlog, mock, clock):
    # Backlog's windows are a minute long: a reset an hour away is a wrong header, not a wait.
    mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1}, headers=limits(150, 0, NOW + 3600))

    backlog.get_issue("ACME-1")
    backlog.get_issue("ACME-1")

    assert clock.slept == [MAX_PACING_WAIT]

"""Deliveries through automedia's real processes (gunicorn, qcluster, run_scheduler).

Each test starts its own Stack (sandbox/stack.py): a throwaway database,
the web server, workers and schedulers as subprocesses, and a FakeBacklog (which POSTs
its webhooks to the web server) and a FakeLine in this process. The tests use no ORM
here: they look at the fakes and ask the stack's own database through `manage.py shell`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from core.timeutil import JST, fmt_jst
from sandbox.line import RecordedLineRequest
from sandbox.stack import Stack
from tests.helpers.stack import (
    DISPATCHED,
    PROJECT,
    REGISTERED,
    RESERVED,
    comments,
    e2e_postgres_url,
    patches,
    reserved_for,
    running_stack,
    start_schedulers,
    start_workers,
    successful_patches,
    whole_seconds_from_now,
)

pytestmark = pytest.mark.e2e

PUSH = "/v2/bot/message/push"
POSTGRES_URL = e2e_postgres_url("many")
RETRY_KEY = "x-line-retry-key"


# -- issues --------------------------------------------------------------------------


def new_group() -> str:
    return f"C{uuid.uuid4().hex}"


def issue_body(*, publish_at: datetime, group: str, template: str) -> str:
    return (
        "## 配信メタ\n"
        "- チャネル: LINE\n"
        f"- 投稿日時: {publish_at:%Y-%m-%d %H:%M:%S} (JST)\n"
        f"- 対象タグ: group:{group}\n"
        f"- テンプレ: {template}\n"
        "\n## 文面 / 変数\n"
        "- date: 2026-12-10\n"
        "- hours: 10:00-18:00\n"
    )


def create_issue(stack: Stack, *, publish_at: datetime, group: str) -> str:
    template = f"announce_open@{stack.templates['announce_open']}"
    description = issue_body(publish_at=publish_at, group=group, template=template)
    issue = stack.backlog.create_issue(
        PROJECT, summary="営業開始告知", description=description, status="処理中"
    )
    return issue["issueKey"]


def approve_new_issue(stack: Stack, *, publish_at: datetime, group: str) -> str:
    """A manager writes an issue, then moves it to automedia承認 (two webhooks)."""
    key = create_issue(stack, publish_at=publish_at, group=group)
    stack.backlog.update_issue(key, status="automedia承認")
    return key


# -- what the fakes saw ------------------------------------------------------------------


def line_requests(stack: Stack, *, status: int | None = None) -> list[RecordedLineRequest]:
    return [r for r in list(stack.line.requests) if r.path == PUSH and (status is None or r.status == status)]


def schedules_left(stack: Stack) -> int:
    return int(stack.shell("from deliveries.models import DeliverySchedule as S; print(S.objects.count())"))


# -- processes ---------------------------------------------------------------------------


# -- the tests ---------------------------------------------------------------------------


def test_it_delivers_within_a_second_of_due_at(tmp_path: Path):
    with running_stack(tmp_path) as stack:
        start_workers(stack, "worker-1")
        start_schedulers(stack, "sched-1")
        group, publish_at = new_group(), whole_seconds_from_now(8)

        key = approve_new_issue(stack, publish_at=publish_at, group=group)
        stack.wait_for(lambda: reserved_for(stack, key), 6, message="the reservation comment")
        assert reserved_for(stack, key) == publish_at  # due_at is 投稿日時 itself (not now+5s)
        stack.wait_for(lambda: successful_patches(stack, key), 15, message="the write-back PATCH")
        assert schedules_left(stack) == 0

        [push] = stack.line.sent("push")
        lateness = push.received_at - publish_at.timestamp()
        print(f"\nLINE received the push {lateness:.3f}s after due_at")
        assert 0.0 <= lateness <= 1.0
        assert push.body["to"] == group
        assert "10:00-18:00" in push.body["messages"][0]["text"]
        [patch] = patches(stack, key)
        issue = stack.backlog.issue(key)
        assert patch.status == 200
        assert patch.form["statusId"] == [str(stack.backlog.status_id(PROJECT, "automedia実行済み"))]
        field = stack.backlog.custom_field_id(PROJECT, "自動配信実行日時")
        delivered_at = patch.form[f"customField_{field}"][0]
        assert patch.form["comment"][0].startswith(
            f"{DISPATCHED}{fmt_jst(datetime.fromisoformat(delivered_at))}"
        )
        assert issue["status"]["name"] == "automedia実行済み"
        assert datetime.fromisoformat(delivered_at) >= publish_at


def test_it_does_not_send_twice_after_the_worker_is_killed_mid_delivery(tmp_path: Path):
    with running_stack(tmp_path) as stack:  # DELIVERY_LEASE_SECONDS=5
        start_workers(stack, "worker-1")
        start_schedulers(stack, "sched-1")
        # LINE takes the push (sent, retry key remembered) but answers only 3 s later.
        stack.line.fail_next(0, delay=3.0, then_accept=True, path_prefix=PUSH)
        key = approve_new_issue(stack, publish_at=whole_seconds_from_now(6), group=new_group())

        stack.wait_for(lambda: stack.line.total_usage > 0, 20, message="LINE to accept the first push")
        assert stack.line.sent() == []  # recorded once answered: the worker is still waiting
        stack.kill("worker-1")  # the whole qcluster, while its worker waits for LINE's answer
        killed_at = time.monotonic()
        start_workers(stack, "worker-2")
        stack.wait_for(lambda: successful_patches(stack, key), 20, message="the write-back PATCH")
        print(f"\nwritten back {time.monotonic() - killed_at:.1f}s after the kill")
        assert schedules_left(stack) == 0

        [accepted] = stack.line.sent("push")
        [duplicate] = line_requests(stack, status=409)
        assert duplicate.headers[RETRY_KEY] == accepted.headers[RETRY_KEY]
        assert len(line_requests(stack)) == 2
        assert [p.status for p in patches(stack, key)] == [200]
        assert [c for c in comments(stack, key) if c.startswith(DISPATCHED)] == [
            patches(stack, key)[0].form["comment"][0]
        ]
        assert stack.backlog.issue(key)["status"]["name"] == "automedia実行済み"


def claim_token(stack: Stack, key: str) -> str:
    code = (
        "from deliveries.models import DeliverySchedule\n"
        f"print(DeliverySchedule.objects.get(task__issue_key={key!r}).claimed_by)"
    )
    return stack.shell(code)


def test_a_task_waiting_in_a_killed_deliverers_own_queue_is_claimed_again_at_once(tmp_path: Path):
    """The only worker of a deliverer waits for LINE; the next post's task, taken from the
    broker by the deliverer's pusher, waits in the cluster's own queue. The cluster dies:
    the scheduler claims both posts again at once, though their leases have minutes to run."""
    env = {"DELIVERY_LEASE_SECONDS": "300", "LINE_TIMEOUT_SECONDS": "300"}
    with running_stack(tmp_path, env=env) as stack:
        stack.spawn("worker-1", "qcluster", env={"Q_CLUSTER_NAME": "deliveries", "DELIVERY_WORKERS": "1"})
        stack.spawn("worker-1-events", "qcluster")
        start_schedulers(stack, "sched-1")
        stack.line.fail_next(0, delay=600, then_accept=True, path_prefix=PUSH)  # held until the stop
        first_at = whole_seconds_from_now(6)
        first = approve_new_issue(stack, publish_at=first_at, group=new_group())
        second = approve_new_issue(stack, publish_at=first_at + timedelta(seconds=1), group=new_group())

        stack.wait_for(lambda: stack.line.total_usage > 0, 20, message="LINE to take the first push")
        stack.wait_for(
            lambda: claim_token(stack, second).startswith("p"), 20, message="the pusher to take a task"
        )
        held = {key: claim_token(stack, key) for key in (first, second)}
        assert held[first].startswith("h")  # the worker's own
        stack.kill("worker-1")

        stack.wait_for(
            lambda: all(claim_token(stack, key) not in ("", token) for key, token in held.items()),
            20,
            message="the scheduler to claim both posts again",
        )
        start_workers(stack, "worker-2")
        stack.wait_for(lambda: len(successful_patches(stack)) == 2, 30, message="both write-backs")

        # Answered so far: the second post, and the first post's resend, refused as a
        # duplicate of the push LINE still holds; each post once.
        answers = sorted((r.status, r.headers[RETRY_KEY]) for r in line_requests(stack))
        assert [status for status, _ in answers] == [200, 409] and answers[0][1] != answers[1][1]


def test_it_retries_a_500_from_line_through_the_real_processes(tmp_path: Path):
    with running_stack(tmp_path) as stack:
        start_workers(stack, "worker-1")
        start_schedulers(stack, "sched-1")
        stack.line.fail_next(500, path_prefix=PUSH)
        key = approve_new_issue(stack, publish_at=whole_seconds_from_now(6), group=new_group())

        stack.wait_for(lambda: line_requests(stack, status=500), 20, message="the push answered 500")
        answered_at = datetime.fromtimestamp(line_requests(stack, status=500)[0].received_at, JST)
        states: list[dict] = []

        def retry_recorded() -> bool:
            states.append(retry_state(stack, key))
            return states[-1]["attempts"] > 0

        stack.wait_for(retry_recorded, 10, 0.2, "the retry to be recorded")
        state = states[-1]
        assert state["attempts"] == 1
        delay = (datetime.fromisoformat(state["due_at"]) - answered_at).total_seconds()
        assert 29.0 <= delay <= 31.5
        assert state["last_error"]
        assert state["claimed_by"] == ""
        assert state["outcomes"] == [["retry", 500]]
        assert stack.line.sent() == []
        assert patches(stack, key) == []


def retry_state(stack: Stack, key: str) -> dict:
    code = (
        "import json\n"
        "from deliveries.models import DeliveryAttempt, DeliverySchedule\n"
        f"s = DeliverySchedule.objects.get(task__issue_key={key!r})\n"
        f"a = DeliveryAttempt.objects.filter(task__issue_key={key!r}).order_by('id')\n"
        "print(json.dumps({'attempts': s.attempts, 'due_at': s.due_at.isoformat(),"
        " 'last_error': s.last_error, 'claimed_by': s.claimed_by,"
        " 'outcomes': [[x.outcome, x.status_code] for x in a]}))"
    )
    return json.loads(stack.shell(code))


# -- a delivery while webhooks are queued --------------------------------------------------


def test_it_delivers_on_time_while_a_burst_of_approvals_is_being_processed(tmp_path: Path):
    with running_stack(tmp_path) as stack:
        start_workers(stack, "worker-1")
        start_schedulers(stack, "sched-1")
        tomorrow = whole_seconds_from_now(24 * 3600)
        others = create_quietly(stack, tomorrow, 150)
        publish_at = whole_seconds_from_now(7)
        key = approve_new_issue(stack, publish_at=publish_at, group=new_group())
        stack.wait_for(lambda: reserved_for(stack, key), 5, message="the reservation comment")

        time.sleep(max(0.0, publish_at.timestamp() - 3.0 - time.time()))
        for other in others:  # 3 s before due, a manager approves tomorrow's posts in one go
            stack.backlog.update_issue(other, status="automedia承認")
        stack.wait_for(lambda: stack.line.sent("push"), 30, message="the push")

        [push] = stack.line.sent("push")
        lateness = push.received_at - publish_at.timestamp()
        print(f"\nthe push reached LINE {lateness:.2f}s after due_at, behind the approvals' webhooks")
        assert lateness <= 1.0


# -- the scheduler while a tenant is at its concurrency limit ---------------------------------


def test_it_does_not_busy_loop_the_scheduler_while_the_tenant_is_at_capacity(tmp_path: Path):
    with running_stack(tmp_path) as stack:
        stack.shell("from core.models import Tenant; Tenant.objects.update(max_concurrent_deliveries=1)")
        start_workers(stack, "worker-1")
        start_schedulers(stack, "sched-1")
        # The first push holds the tenant's only slot for 4 s (less than the 5 s lease).
        stack.line.fail_next(0, delay=4.0, then_accept=True, path_prefix=PUSH)
        publish_at = whole_seconds_from_now(6)
        for _ in range(2):
            approve_new_issue(stack, publish_at=publish_at, group=new_group())

        stack.wait_for(lambda: stack.line.total_usage > 0, 20, message="the first push to be in flight")
        before, began = stack.cpu_seconds("sched-1"), time.monotonic()
        time.sleep(3.0)  # the second issue is due, and waits for the slot
        share = (stack.cpu_seconds("sched-1") - before) / (time.monotonic() - began)
        print(f"\nrun_scheduler used {share:.0%} of a CPU while the tenant was at capacity")
        assert share < 0.10


# -- 500 deliveries, 2 schedulers, 2 workers, PostgreSQL -------------------------------------

MANY = 500
MANY_LEAD_SECONDS = 30  # 投稿日時 of every issue, from the first approval
# The waits fail only when nothing advances for this long: a loaded machine registers and
# delivers more slowly (the report in the test's output says how fast), never differently.
STALL_SECONDS = 60.0


def test_each_of_500_deliveries_happens_exactly_once_with_two_schedulers_and_two_workers_on_postgresql(
    tmp_path: Path,
):
    # Always PostgreSQL, whatever DATABASE_URL says; unreachable = a failure, never a skip.
    # The production-like lease: this test is about concurrency, not about dead workers.
    with running_stack(tmp_path, database_url=POSTGRES_URL, env={"DELIVERY_LEASE_SECONDS": "60"}) as stack:
        start_workers(stack, "worker-1", "worker-2")
        start_schedulers(stack, "sched-1", "sched-2")
        began = time.monotonic()
        publish_at = whole_seconds_from_now(MANY_LEAD_SECONDS)
        keys = create_quietly(stack, publish_at, MANY)

        for key in keys:  # a manager approves each one: 500 status-change webhooks
            stack.backlog.update_issue(key, status="automedia承認")
        stack.wait_for(
            lambda: count_registered(stack) >= MANY,
            STALL_SECONDS,
            0.5,
            f"{MANY} registration comments",
            progress=lambda: count_registered(stack),
        )
        registered = time.monotonic() - began
        ahead = count_reserved(stack)
        stack.wait_for(
            lambda: len(successful_patches(stack)) >= MANY,
            STALL_SECONDS,
            0.5,
            f"{MANY} write-backs",
            progress=lambda: len(successful_patches(stack)),
        )
        written_back = time.monotonic() - began
        cpu = {
            name: stack.cpu_seconds(name) for name in ("sched-1", "sched-2", "worker-1", "worker-2", "web")
        }
        stack.wait_for(lambda: schedules_left(stack) == 0, 15, 0.5, "no schedule left")

        pushes = stack.line.sent("push")
        report_many(publish_at, pushes, registered, ahead, written_back, cpu)
        accepted = Counter(r.headers[RETRY_KEY] for r in pushes)
        assert len(accepted) == MANY
        assert [key for key, n in accepted.items() if n > 1] == []
        patched = Counter(r.path for r in successful_patches(stack))
        assert len(patched) == MANY and set(patched.values()) == {1}
        dispatched = [k for k in keys for c in comments(stack, k) if c.startswith(DISPATCHED)]
        assert sorted(dispatched) == sorted(keys)


def create_quietly(stack: Stack, publish_at: datetime, count: int) -> list[str]:
    """Issues written before automedia is watching (no webhook), so only approvals are events."""
    stack.backlog.set_webhook(PROJECT, None)
    try:
        return [create_issue(stack, publish_at=publish_at, group=new_group()) for _ in range(count)]
    finally:
        stack.backlog.set_webhook(PROJECT, stack.tenants["e2e"]["backlog_webhook_url"])


def registration_comments(stack: Stack) -> list[str]:
    """Every comment automedia posted that registers an approval (see REGISTERED)."""
    texts = (
        r.form.get("content", [""])[0]
        for r in list(stack.backlog.requests)
        if r.method == "POST" and r.path.endswith("/comments") and r.status < 300
    )
    return [text for text in texts if REGISTERED.match(text)]


def count_registered(stack: Stack) -> int:
    return len(registration_comments(stack))


def count_reserved(stack: Stack) -> int:
    """Registered before 投稿日時: reserved for that second."""
    return sum(1 for text in registration_comments(stack) if RESERVED.match(text))


def report_many(
    publish_at: datetime,
    pushes: list[RecordedLineRequest],
    registered: float,
    ahead: int,
    written_back: float,
    cpu: dict[str, float],
) -> None:
    lateness = sorted(r.received_at - publish_at.timestamp() for r in pushes)
    print(
        f"\n{MANY} approvals registered {registered:.1f}s after the first one ({ahead} before 投稿日時),"
        f" all written back after {written_back:.1f}s (投稿日時 at +{MANY_LEAD_SECONDS}s)"
    )
    if lateness:
        middle = lateness[len(lateness) // 2]
        print(f"push lateness: first {lateness[0]:.2f}s, median {middle:.2f}s, last {lateness[-1]:.2f}s")
    print("CPU seconds: " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in cpu.items()))

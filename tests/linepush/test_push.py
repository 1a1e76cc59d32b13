"""Sending queued group posts through the scheduler loop, against the fake LINE on loopback."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import core.keeper
from core.due import queue_broker, take_over
from core.keeper import keeper
from core.models import Tenant
from deliveries.scheduler_steps import Pass
from line.models import LineMonthlyUsage, LinePlan, LinePushSettings
from line.transport import LineTransport
from line.usage import month_of
from linepush.models import RETRY_KEY_NAMESPACE, LinePushAttempt, LinePushItem
from linepush.push import PUSH_LEASE, push_claim, push_step
from linepush.sending import lane_of, push_items, push_send
from tests.helpers.factories import TenantFactory
from tests.helpers.linepush import PUSH, enqueue, group, new_group_id, reload, shop, step
from tests.helpers.waiting import STUCK_SECONDS, eventually

pytestmark = pytest.mark.django_db
Status = LinePushItem.Status


@pytest.fixture
def tenant(db):
    return shop()


@pytest.fixture
def team(tenant):
    return group(tenant)


def test_it_pushes_a_due_item_on_the_next_scheduler_pass(line, tenant, team):
    item = enqueue(tenant, team)

    assert step() is Pass.WORKED

    [sent] = line.sent(PUSH)
    assert sent.body == {"to": team.group_id, "messages": [{"type": "text", "text": "明日 10:00 撮影です"}]}
    item = reload(item)
    assert (item.status, item.attempt_count, item.request_id) == (Status.SENT, 1, sent.request_id)
    assert item.sent_at is not None and item.claimed_by == "" and item.lease_until is None
    [attempt] = LinePushAttempt.objects.filter(item=item)
    assert (attempt.outcome, attempt.status_code) == ("sent", 200)
    assert step() is Pass.IDLE


def test_it_sends_x_line_retry_key_derived_from_the_tenant_and_the_dedupe_key(line, tenant, team):
    item = enqueue(tenant, team, key="task:abc-123:approved")
    step()

    [sent] = line.sent(PUSH)
    expected = str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{tenant.pk}:task:abc-123:approved"))
    assert sent.headers["x-line-retry-key"] == expected == item.retry_key == reload(item).retry_key


def test_it_posts_for_two_tenants_with_the_same_dedupe_key_on_one_channel(line, tenant, team):
    """Keys taken from uuid5(dedupe key) alone made LINE answer 409 to the second tenant:
    its item ended `sent` and nothing was posted."""
    other = TenantFactory(slug="other", line_channel_token=tenant.line_channel_token)
    mine = enqueue(tenant, team, key="reminder:x:1")
    theirs = enqueue(other, group(other), key="reminder:x:1")

    step()

    assert mine.retry_key != theirs.retry_key
    assert len(line.sent(PUSH)) == 2
    assert [a.outcome for a in LinePushAttempt.objects.order_by("item__tenant__slug")] == ["sent", "sent"]


def test_it_sends_the_retry_key_stored_on_the_item(line, tenant, team):
    """An item first tried before retry keys included the tenant keeps its old key: LINE's
    409 still covers the post it may have accepted."""
    item = enqueue(tenant, team, key="task:abc-123:approved")
    old = str(uuid.uuid5(RETRY_KEY_NAMESPACE, "task:abc-123:approved"))
    LinePushItem.objects.filter(pk=item.pk).update(retry_key=old)

    step()

    assert [r.headers["x-line-retry-key"] for r in line.requests if r.path == PUSH] == [old]


def test_an_item_made_without_save_gets_its_retry_key_before_the_first_attempt(line, tenant, team):
    [item] = LinePushItem.objects.bulk_create(
        [
            LinePushItem(
                tenant=tenant,
                ext_group_id=team.group_id,
                trigger_type="reminder",
                payload=[{"type": "text", "text": "明日"}],
                dedupe_key="bulk-1",
                scheduled_at=timezone.now(),
            )
        ]
    )
    assert item.retry_key == ""

    step()

    item = LinePushItem.objects.get(dedupe_key="bulk-1")
    assert item.status == Status.SENT and item.retry_key == item.derived_retry_key()
    assert line.requests[-1].headers["x-line-retry-key"] == item.retry_key


def test_it_waits_for_scheduled_at(line, tenant, team):
    item = enqueue(tenant, team, scheduled_at=timezone.now() + timedelta(minutes=10))

    assert step() is Pass.IDLE
    with time_machine.travel(item.scheduled_at + timedelta(milliseconds=10)):
        assert step() is Pass.WORKED
    assert reload(item).status == Status.SENT


def test_it_backs_off_exponentially_on_5xx_and_fails_after_three_attempts(line, tenant, team):
    line.fail_next(500, count=3, path_prefix=PUSH)
    item = enqueue(tenant, team)
    start = timezone.now()

    step()
    item = reload(item)
    assert (item.status, item.attempt_count) == (Status.PENDING, 1)
    assert item.scheduled_at - start == pytest.approx(timedelta(seconds=30), abs=timedelta(seconds=2))
    assert step() is Pass.IDLE  # not before the backoff
    with time_machine.travel(item.scheduled_at + timedelta(seconds=1)):
        step()
    item = reload(item)
    assert item.attempt_count == 2
    with time_machine.travel(item.scheduled_at - timedelta(seconds=1)):
        assert step() is Pass.IDLE
    with time_machine.travel(item.scheduled_at + timedelta(seconds=1)):
        step()

    item = reload(item)
    assert item.status == Status.FAILED and item.attempt_count == 3
    assert item.last_error.startswith("再試行の上限（3 回）に達しました。最後のエラー: サーバーエラー（500）")
    assert line.sent() == []
    assert [a.outcome for a in item.attempts.order_by("id")] == ["retry", "retry", "failed"]


def test_a_retry_after_replaces_the_ladders_step_and_counts_as_an_attempt(line, tenant, team):
    line.fail_next(429, path_prefix=PUSH, headers={"Retry-After": "5"})
    item = enqueue(tenant, team)
    start = timezone.now()

    step()

    item = reload(item)
    assert (item.status, item.attempt_count) == (Status.PENDING, 1)
    assert item.scheduled_at - start == pytest.approx(timedelta(seconds=5), abs=timedelta(seconds=2))


def _resend_after_one_failure(item) -> LinePushItem:
    step()
    item = reload(item)
    assert item.status == Status.PENDING and item.attempt_count == 1
    with time_machine.travel(item.scheduled_at + timedelta(seconds=1)):
        step()
    return reload(item)


def test_it_retries_a_lost_answer_and_line_answers_409_for_what_it_had_accepted(line, tenant, team):
    line.fail_next(500, path_prefix=PUSH, then_accept=True)  # LINE took it; the answer was a 500
    item = enqueue(tenant, team)

    item = _resend_after_one_failure(item)

    assert item.status == Status.SENT
    assert len(line.sent(PUSH)) == 1  # one post in the group
    assert [r.status for r in line.requests if r.path == PUSH] == [500, 409]
    assert [a.outcome for a in item.attempts.order_by("id")] == ["retry", "duplicate"]


def test_it_retries_a_timeout_with_the_same_key(line, tenant, team):
    # LINE sends the first push and holds its answer until released: past the client's timeout.
    line.fail_next(0, delay=60.0, path_prefix=PUSH, then_accept=True)
    item = enqueue(tenant, team)

    item = _resend_after_one_failure(item)

    assert item.status == Status.SENT
    assert "タイムアウト" in item.attempts.order_by("id").first().error
    assert [r.status for r in line.requests if r.path == PUSH] == [409]  # the timed-out one is held
    line.release_held()
    [sent] = eventually(lambda: line.sent(PUSH), "the timed-out push's answer")
    assert sent.body == {"to": team.group_id, "messages": [{"type": "text", "text": "明日 10:00 撮影です"}]}
    answered = [(r.status, r.headers["x-line-retry-key"]) for r in line.requests if r.path == PUSH]
    assert answered == [(409, item.retry_key), (200, item.retry_key)]


def test_it_fails_a_4xx_at_once(line, tenant, team):
    line.fail_next(400, path_prefix=PUSH)
    item = enqueue(tenant, team)

    step()

    item = reload(item)
    assert (item.status, item.attempt_count) == (Status.FAILED, 1)
    assert item.last_error.startswith("リクエストが拒否されました（400）")
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        assert step() is Pass.IDLE


def test_it_counts_a_409_as_sent(line, tenant, team):
    line.fail_next(409, path_prefix=PUSH, headers={"x-line-accepted-request-id": "req-accepted"})
    item = enqueue(tenant, team)

    step()

    item = reload(item)
    assert (item.status, item.request_id) == (Status.SENT, "req-accepted")


def test_it_flags_the_tenant_when_line_rejects_the_token(line, tenant, team):
    Tenant.objects.filter(pk=tenant.pk).update(line_channel_token="revoked")
    item = enqueue(tenant, team)

    step()

    assert reload(item).status == Status.FAILED
    assert Tenant.objects.get(pk=tenant.pk).line_token_invalid_at is not None


def test_it_skips_an_item_whose_group_turned_pushes_off_after_enqueue(line, tenant, team):
    item = enqueue(tenant, team)
    team.allow_outbound_push = False
    team.save()

    step()

    item = reload(item)
    assert item.status == Status.SKIPPED and "allow_outbound_push" in item.last_error
    assert line.sent() == []


def test_it_never_sends_an_item_waiting_for_approval(line, tenant, team):
    item = enqueue(tenant, team, trigger="escalation")

    assert reload(item).status == Status.WAITING_APPROVAL
    with time_machine.travel(timezone.now() + timedelta(days=1)):
        assert step() is Pass.IDLE
    assert line.sent() == []


def test_it_fails_the_fourth_post_to_a_group_within_five_minutes_and_does_not_resend(line, tenant, team):
    items = [enqueue(tenant, team, key=f"k{n}") for n in range(4)]

    step()

    assert [reload(i).status for i in items] == [Status.SENT] * 3 + [Status.FAILED]
    assert (
        reload(items[3]).last_error
        == "レート制限: このグループへの投稿は 5 分間に 3 件までです（再送しません）"
    )
    assert len(line.sent(PUSH)) == 3
    with time_machine.travel(timezone.now() + timedelta(minutes=10)):
        assert step() is Pass.IDLE  # failed stays failed: no resend loop
        later = enqueue(tenant, team, key="k-later")
        step()
    assert reload(later).status == Status.SENT


def test_it_counts_earlier_posts_in_the_group_window(line, tenant, team):
    for n in range(3):
        enqueue(tenant, team, key=f"early{n}")
        step()
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        late = enqueue(tenant, team, key="late")
        step()

    assert reload(late).status == Status.FAILED


def test_it_applies_the_per_tenant_rate_limit(line, tenant):
    LinePushSettings.objects.update_or_create(tenant=tenant, defaults={"tenant_rate_limit": 2})
    items = [enqueue(tenant, group(tenant), key=f"k{n}") for n in range(3)]

    step()

    assert [reload(i).status for i in items] == [Status.SENT, Status.SENT, Status.FAILED]
    assert reload(items[2]).last_error.startswith("レート制限: このテナントの投稿は 5 分間に 2 件まで")


def _usage(tenant, messages: int, plan: str = "communication") -> None:
    LinePushSettings.objects.update_or_create(
        tenant=tenant, defaults={"plan": LinePlan.objects.get(code=plan)}
    )
    month = month_of(timezone.now(), LinePushSettings.objects.get(tenant=tenant).zone)
    LineMonthlyUsage.objects.update_or_create(tenant=tenant, month=month, defaults={"messages": messages})


def test_it_holds_a_post_that_would_exceed_the_monthly_quota(line, tenant, team):
    _usage(tenant, 198)  # コミュニケーションプラン: 200; the group has 3 members
    item = enqueue(tenant, team)

    step()

    item = reload(item)
    assert item.status == Status.HELD
    assert "今月の LINE メッセージ上限を超えるため保留しました" in item.last_error
    assert "使用 198 / 上限 200 通、この投稿は 3 人分" in item.last_error
    assert line.sent() == []


def test_it_counts_a_group_post_once_per_member(line, tenant):
    _usage(tenant, 0)
    team = group(tenant, members=7)
    enqueue(tenant, team)

    step()

    [sent] = line.sent(PUSH)
    assert sent.body == {"to": team.group_id, "messages": [{"type": "text", "text": "明日 10:00 撮影です"}]}
    assert LineMonthlyUsage.objects.get(tenant=tenant).messages == 7


def test_it_warns_admins_once_when_the_month_reaches_80_percent(line, tenant, team):
    _usage(tenant, 155)  # 155 + 3 < 160; the next post crosses 80 % of 200
    enqueue(tenant, team, key="a")
    step()
    assert mail.outbox == []

    enqueue(tenant, team, key="b")
    enqueue(tenant, team, key="c")
    step()

    [warning] = mail.outbox
    assert "80%" in warning.subject
    assert "（161 / 200 通）" in warning.body or "（164 / 200 通）" in warning.body
    assert LineMonthlyUsage.objects.get(tenant=tenant).warned_at is not None


def test_the_claim_tells_its_task_when_the_month_reaches_80_percent_and_only_then_it_reads_the_count(
    line, tenant
):
    """The claim knows the month's count as it leaves it; a task below 80 % (nearly every
    task) does not read the plan and the count again to find that out."""
    _usage(tenant, 150)  # of 200 (コミュニケーション); the group costs 3
    team = group(tenant, rate_limit_count=10)

    def send(key: str) -> tuple[bool, list[str]]:
        enqueue(tenant, team, key=key)
        with mock.patch("django_q.tasks.async_task") as enqueue_task:
            assert push_step(now=timezone.now(), limit=50) is Pass.WORKED
        [call] = enqueue_task.call_args_list
        with CaptureQueriesContext(connection) as queries:
            sent = push_send(item_ids=call.args[1], token=call.args[2], near_quota=call.args[3])
        assert sent == {Status.SENT: 1} and line.sent(PUSH)[-1].body["to"] == team.group_id
        return call.args[3], [q["sql"] for q in queries.captured_queries if "linemonthlyusage" in q["sql"]]

    assert send("a") == (False, [])  # 153 < 160
    assert mail.outbox == []
    near, reads = send("b")  # 156
    assert (near, reads) == (False, [])
    near, reads = send("c")  # 159 < 160
    assert (near, reads) == (False, [])
    near, reads = send("d")  # 162: crosses 80 %
    assert near is True and reads
    [warning] = mail.outbox
    assert "（162 / 200 通）" in warning.body
    assert send("e") == (False, [])  # warned once this month: no flag, no read
    assert len(line.sent(PUSH)) == 5


def test_it_holds_a_post_line_refuses_for_the_monthly_limit(line, tenant, team):
    line.set_quota(type="limited", value=2, total_usage=0)  # the group costs 3
    item = enqueue(tenant, team)

    step()

    item = reload(item)
    assert item.status == Status.HELD and "LINE の月間上限" in item.last_error
    assert LineMonthlyUsage.objects.get(tenant=tenant).messages == 0  # the reservation was given back


def test_a_worker_that_dies_after_the_push_is_covered_by_the_retry_key(line, tenant, team, settings):
    item = enqueue(tenant, team)
    [claim] = push_claim(now=timezone.now(), limit=10)
    push_items(list(LinePushItem.objects.filter(pk__in=claim.item_ids).select_related("tenant")))
    # … and the worker dies before recording: the lease runs out, the next pass resends.

    assert step() is Pass.IDLE  # the lease still holds
    with time_machine.travel(timezone.now() + timedelta(seconds=settings.LINEPUSH_LEASE_SECONDS + 1)):
        assert step() is Pass.WORKED

    assert reload(item).status == Status.SENT
    assert len(line.sent(PUSH)) == 1
    assert [r.status for r in line.requests if r.path == PUSH] == [200, 409]


def test_an_item_claimed_again_after_its_worker_died_keeps_its_one_reservation(line, tenant, team, settings):
    item = enqueue(tenant, team)  # the group costs 3 messages
    assert push_claim(now=timezone.now(), limit=10)  # … and the worker dies before it pushes
    assert LineMonthlyUsage.objects.get(tenant=tenant).messages == 3

    with time_machine.travel(timezone.now() + timedelta(seconds=6)):  # one short lease later
        assert step() is Pass.WORKED

    assert reload(item).status == Status.SENT
    assert LineMonthlyUsage.objects.get(tenant=tenant).messages == 3


def test_a_live_workers_keeper_keeps_its_items_across_a_push_longer_than_the_lease(
    line, tenant, team, settings
):
    item = enqueue(tenant, team)
    lease = timedelta(seconds=settings.LINEPUSH_LEASE_SECONDS)
    real, claimable = LineTransport._send, []

    def slow(transport, *args, **kwargs):  # LINE answers after three leases
        for _ in range(9):
            clock.shift(lease / 3)
            keeper.renew_held(timezone.now())  # the keeper's pass, each third of a lease
            claimable.append(push_claim(now=timezone.now(), limit=10))
        return real(transport, *args, **kwargs)

    with (
        time_machine.travel(timezone.now(), tick=False) as clock,
        mock.patch.object(LineTransport, "_send", slow),
    ):
        [claim] = push_claim(now=timezone.now(), limit=10)
        assert push_send(item_ids=claim.item_ids, token=claim.token) == {Status.SENT: 1}

    assert claimable == [[]] * 9
    assert reload(item).status == Status.SENT and len(line.sent(PUSH)) == 1


def test_it_does_not_resend_blind_after_the_retry_key_expired(line, tenant, team):
    item = enqueue(tenant, team)
    LinePushItem.objects.filter(pk=item.pk).update(
        first_attempt_at=timezone.now() - timedelta(hours=23, minutes=1)
    )

    step()

    item = reload(item)
    assert item.status == Status.FAILED and "23 時間" in item.last_error
    assert line.sent() == []


def test_the_cap_counts_items_waiting_for_a_worker_not_those_a_worker_sends(line, tenant, team, settings):
    settings.LINEPUSH_MAX_IN_FLIGHT = 1
    first, second = enqueue(tenant, team, key="a"), enqueue(tenant, team, key="b")
    [claim] = push_claim(now=timezone.now(), limit=10)
    assert claim.item_ids == [first.pk]
    assert push_claim(now=timezone.now(), limit=10) == []  # one waits in the broker: the cap

    take_over(
        LinePushItem.objects.all(), pks=[first.pk], now=timezone.now(), lease=PUSH_LEASE, token=claim.token
    )

    [after] = push_claim(now=timezone.now(), limit=10)  # a worker sends the first: room again
    assert after.item_ids == [second.pk]


def test_while_items_wait_for_a_worker_it_claims_only_a_whole_pass(line, tenant, team, settings):
    settings.LINEPUSH_MAX_IN_FLIGHT = 3
    team = group(tenant, rate_limit_count=10)
    items = [enqueue(tenant, team, key=f"k{n}") for n in range(4)]
    [claim] = push_claim(now=timezone.now(), limit=2)
    assert claim.item_ids == [items[0].pk, items[1].pk]

    assert push_claim(now=timezone.now(), limit=2) == []  # room for 1 of a pass of 2: wait

    take_over(
        LinePushItem.objects.all(),
        pks=claim.item_ids,
        now=timezone.now(),
        lease=PUSH_LEASE,
        token=claim.token,
    )
    [after] = push_claim(now=timezone.now(), limit=2)
    assert after.item_ids == [items[2].pk, items[3].pk]


def test_the_step_says_held_while_the_cap_holds_due_items_back_and_idle_when_none_is_due(
    line, tenant, team, settings
):
    """HELD makes run_scheduler look again within SCHEDULER_HELD_POLL_SECONDS, not its poll."""
    settings.LINEPUSH_MAX_IN_FLIGHT = 1
    first, second = enqueue(tenant, team, key="a"), enqueue(tenant, team, key="b")
    with mock.patch("django_q.tasks.async_task") as enqueue_task:
        assert push_step(now=timezone.now(), limit=10) is Pass.WORKED
        assert push_step(now=timezone.now(), limit=10) is Pass.HELD  # `second` waits for room
        [call] = enqueue_task.call_args_list
        push_send(item_ids=call.args[1], token=call.args[2])
        assert push_step(now=timezone.now(), limit=10) is Pass.WORKED
        [_, call] = enqueue_task.call_args_list
        push_send(item_ids=call.args[1], token=call.args[2])
        assert push_step(now=timezone.now(), limit=10) is Pass.IDLE

    assert reload(first).status == reload(second).status == Status.SENT


def test_lanes_send_at_once_and_keep_each_groups_posts_in_order(line, tenant, monkeypatch, settings):
    monkeypatch.setattr(core.keeper, "THREADS", True)
    settings.LINEPUSH_SEND_LANES = 4
    teams = [group(tenant, group_id, rate_limit_count=10) for group_id in _groups_in_lanes(3)]
    items = [enqueue(tenant, teams[n % 3], key=f"k{n}", text=f"#{n}") for n in range(9)]
    for item in items:
        item.tenant = tenant
    # The first three answers are held until three are held at once: lanes one after
    # another would never get there.
    line.fail_next(0, count=3, path_prefix=PUSH, delay=60.0)
    together = _release_when_held(line, 3)

    outcomes = push_items(items)

    assert together.wait(STUCK_SECONDS) and together.all_at_once
    assert [o.item.pk for o in outcomes] == [i.pk for i in items]
    assert all(o.result is not None for o in outcomes)
    for n, team in enumerate(teams):
        texts = [r.body["messages"][0]["text"] for r in line.sent(PUSH) if r.body["to"] == team.group_id]
        assert texts == [f"#{k}" for k in range(n, 9, 3)]


def _groups_in_lanes(count: int) -> list[str]:
    """Group ids that take `count` different lanes."""
    ids: dict[int, str] = {}
    while len(ids) < count:
        group_id = new_group_id()
        ids.setdefault(lane_of(group_id), group_id)
    return list(ids.values())


class _Release(threading.Event):
    all_at_once = False


def _release_when_held(line, count: int) -> _Release:
    """Release `line`'s held answers once `count` are held together (or, stuck, after
    STUCK_SECONDS, saying so); set when done."""
    done = _Release()

    def watch() -> None:
        deadline = time.monotonic() + STUCK_SECONDS
        while line.held < count and time.monotonic() < deadline:
            time.sleep(0.01)
        done.all_at_once = line.held >= count
        line.release_held()
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    return done


def test_the_step_hands_its_claims_to_the_deliveries_queue_through_the_processs_one_broker(tenant):
    enqueue(tenant, group(tenant))

    with mock.patch("django_q.tasks.async_task") as enqueue_task:
        assert push_step(now=timezone.now(), limit=50) is Pass.WORKED

    [call] = enqueue_task.call_args_list
    assert call.args[0] == "linepush.tasks.push_send"
    assert call.kwargs == {"cluster": "deliveries", "broker": queue_broker("deliveries")}

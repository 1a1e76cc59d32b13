"""Preparing a send ahead of its due second: the issue read early (one Backlog call per
tenant), read once more just before the second, an Instagram container made ahead."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from django_q.models import OrmQ
from prometheus_client import REGISTRY

from deliveries import tasks
from deliveries.channels.models import ChannelPost
from deliveries.channels.tiktok.transport import CREATOR_INFO, VIDEO_INIT
from deliveries.models import DeliverySchedule
from deliveries.prepare import ahead
from deliveries.prepare.ahead import prepare_claim, prepare_run
from deliveries.publish.delivery import WRITEBACK_QUEUED
from deliveries.publish.scheduler import schedules_claim
from tests.helpers.backlog import body
from tests.helpers.deliveries import DUE, MULTICAST
from tests.helpers.factories import TenantFactory

ISSUE_READS = "/api/v2/issues"


def prepare_at(moment) -> list[int]:
    """run_scheduler's prepare step at `moment`, its task run at once: the rows it prepared."""
    with time_machine.travel(moment, tick=False):
        ids = prepare_claim(now=timezone.now(), limit=200)
        prepare_run(ids)
    return ids


def send_at(moment) -> list[str]:
    with time_machine.travel(moment, tick=True):
        return tasks.deliver_batch(schedules_claim(now=timezone.now()))


def issue_reads(fake_backlog) -> list:
    return [r for r in fake_backlog.requests if r.method == "GET" and r.path.startswith(ISSUE_READS)]


def test_it_reads_a_tenants_issues_ahead_in_one_call_and_the_send_reads_none(approved, fake_backlog, line):
    keys = [approved(body()) for _ in range(3)]
    fake_backlog.reset_requests()

    assert len(prepare_at(DUE - timedelta(seconds=30))) == 3  # DELIVERY_PREPARE_SECONDS ahead
    assert prepare_at(DUE - timedelta(seconds=10)) == []  # nothing more until the re-read
    assert len(prepare_at(DUE - timedelta(seconds=2))) == 3  # the re-read, 2/3 of 3 s before
    [first, again] = issue_reads(fake_backlog)
    assert first.path == again.path == ISSUE_READS and len(first.query["id[]"]) == 3
    fake_backlog.reset_requests()

    assert send_at(DUE + timedelta(seconds=0.2)) == [WRITEBACK_QUEUED] * 3

    assert issue_reads(fake_backlog) == []  # at the second only the sends
    assert len(line.sent(MULTICAST)) == 3
    assert not DeliverySchedule.objects.filter(task__issue_key__in=keys, stage="deliver").exists()


def test_sends_due_within_the_gathering_window_are_prepared_together(approved, fake_backlog, line):
    approved(body())
    second = approved(body())
    # A stream: the second send is due 0.4 s after the first (within DELIVERY_RECHECK_SECONDS / 6).
    later = DeliverySchedule.objects.get(task__issue_key=second)
    later.due_at += timedelta(seconds=0.4)
    later.prepare_at += timedelta(seconds=0.4)
    later.save(update_fields=["due_at", "prepare_at"])
    fake_backlog.reset_requests()

    assert len(prepare_at(DUE - timedelta(seconds=30))) == 2  # one pass, one task
    assert len(prepare_at(DUE - timedelta(seconds=2))) == 2  # the re-reads together too
    assert prepare_at(DUE - timedelta(seconds=1.6)) == []
    assert [len(r.query["id[]"]) for r in issue_reads(fake_backlog)] == [2, 2]


def test_a_re_read_inside_the_gathering_window_does_not_ask_for_another(approved, fake_backlog, line):
    approved(body())
    prepare_at(DUE - timedelta(seconds=30))

    assert len(prepare_at(DUE - timedelta(seconds=2.4))) == 1  # gathered a little early

    assert DeliverySchedule.objects.get().prepare_at is None  # no second re-read at DUE - 2 s
    assert prepare_at(DUE - timedelta(seconds=2)) == []


def test_a_row_handed_out_is_held_and_handed_out_again_once_the_hold_has_passed(approved):
    """Its read was lost (the scheduler died): the next pass after HOLD takes it again. The
    hold is no send's claim: no claim run out is counted."""
    approved(body())
    moment = DUE - timedelta(seconds=30)
    before = claimed_again()
    with time_machine.travel(moment, tick=False):
        [row] = prepare_claim(now=timezone.now(), limit=200)  # its read never runs
        assert prepare_claim(now=timezone.now(), limit=200) == []
    with time_machine.travel(moment + ahead.HOLD - timedelta(seconds=1), tick=False):
        assert prepare_claim(now=timezone.now(), limit=200) == []

    with time_machine.travel(moment + ahead.HOLD, tick=False):
        assert prepare_claim(now=timezone.now(), limit=200) == [row]
    assert claimed_again() == before


def claimed_again() -> float:
    labels = {"queue": "deliveries.deliveryschedule"}
    return REGISTRY.get_sample_value("automedia_claims_expired_total", labels) or 0


def test_a_status_taken_back_after_the_first_read_still_stops_the_send(approved, fake_backlog, line):
    key = approved(body())
    prepare_at(DUE - timedelta(seconds=30))
    fake_backlog.update_issue(key, status="処理中")  # its webhook is lost (never pumped)

    prepare_at(DUE - timedelta(seconds=2))

    assert send_at(DUE + timedelta(seconds=0.2)) == ["no longer approved"]
    assert line.sent(MULTICAST) == []


def test_a_body_edited_after_the_last_read_is_caught_by_its_webhook(
    approved, fake_backlog, line, tenant, pump
):
    key = approved(body())
    prepare_at(DUE - timedelta(seconds=30))
    prepare_at(DUE - timedelta(seconds=2))

    with time_machine.travel(DUE - timedelta(seconds=1), tick=False):
        fake_backlog.update_issue(key, description=body().replace("date: 2026-12-10", "date: 2026-12-11"))
        pump(tenant)  # the webhook of the edit, processed before the second

    results = send_at(DUE + timedelta(seconds=0.2))
    assert WRITEBACK_QUEUED not in results and line.sent(MULTICAST) == []


def test_a_read_older_than_the_recheck_window_is_not_relied_on(approved, fake_backlog, line):
    key = approved(body())
    prepare_at(DUE - timedelta(seconds=30))  # the re-read before the second never ran
    fake_backlog.update_issue(key, status="処理中")
    fake_backlog.reset_requests()

    assert send_at(DUE + timedelta(seconds=0.2)) == ["no longer approved"]
    assert [r.path for r in issue_reads(fake_backlog)] == [f"{ISSUE_READS}/{key}"]  # read at the second


@pytest.mark.usefixtures("ig_account")
def test_an_instagram_container_is_made_ahead_and_published_at_the_second(approve_channel, instagram):
    instagram.processing_polls = 3  # IN_PROGRESS for three status reads
    key = approve_channel("instagram")
    moment = DUE - timedelta(seconds=30)
    while prepare_at(moment):
        moment += timedelta(seconds=2)  # each pass asks for the next one 2 s later
        assert moment < DUE
    post = ChannelPost.objects.get(task__issue_key=key)
    assert post.container_id and post.platform_status == "FINISHED" and instagram.published() == []
    before = len(instagram.calls())

    assert send_at(DUE + timedelta(seconds=0.1)) == [WRITEBACK_QUEUED]

    at_the_second = [(r.method, r.path.rsplit("/", 1)[-1]) for r in instagram.calls()[before:]]
    # No container made, no status read: the quota, the publish, then the permalink.
    assert at_the_second == [
        ("GET", "content_publishing_limit"),
        ("POST", "media_publish"),
        ("GET", instagram.published()[0]["id"]),
    ]
    assert ChannelPost.objects.get(task__issue_key=key).phase == ChannelPost.Phase.DONE


@pytest.mark.usefixtures("tt_account")
def test_tiktoks_creator_info_is_read_ahead_and_at_the_second_only_the_init_is_left(approve_channel, tiktok):
    key = approve_channel("tiktok")
    before = len(tiktok.calls(CREATOR_INFO))  # the approval's own check

    prepare_at(DUE - timedelta(seconds=30))  # (its token has expired by then: refreshed once)
    ahead = len(tiktok.calls(CREATOR_INFO))
    assert ahead > before and "creator_info" in ChannelPost.objects.get(task__issue_key=key).details

    [result] = send_at(DUE + timedelta(seconds=0.1))

    assert result.startswith("waiting until")  # published: TikTok processes the upload
    assert len(tiktok.calls(CREATOR_INFO)) == ahead  # none at the second
    assert len(tiktok.calls(VIDEO_INIT)) == 1


class LanesSeen:
    """deliveries.prepare.ahead.readers() as a recorder: (lane key, the call's row ids), in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, list[int]]] = []

    def submit(self, key, call) -> None:
        self.calls.append((key, list(call.args[0])))
        call()


def test_the_scheduler_reads_ahead_in_its_tenants_lanes_100_ids_a_call_not_on_a_queue(
    approved, fake_backlog, line, tenant, monkeypatch
):
    seen = LanesSeen()
    monkeypatch.setattr(ahead, "readers", lambda: seen)
    monkeypatch.setattr(ahead, "ISSUES_PER_READ", 2)
    keys = [approved(body()) for _ in range(3)]
    rows = {s.task.issue_key: s.pk for s in DeliverySchedule.objects.select_related("task")}
    neighbour = TenantFactory(slug="neighbour")
    DeliverySchedule.objects.filter(pk=rows[keys[2]]).update(tenant=neighbour)  # another tenant's row
    fake_backlog.reset_requests()

    with time_machine.travel(DUE - timedelta(seconds=30), tick=False):
        assert ahead.prepare_step(now=timezone.now(), limit=200)

    assert seen.calls == [(tenant.pk, [rows[keys[0]], rows[keys[1]]]), (neighbour.pk, [rows[keys[2]]])]
    assert [len(r.query["id[]"]) for r in issue_reads(fake_backlog)] == [2]  # the neighbour's: its own space
    assert OrmQ.objects.count() == 0  # nothing queued behind write-backs and webhook drains
    assert DeliverySchedule.objects.get(pk=rows[keys[0]]).prepared["issue"]["issueKey"] == keys[0]

"""Producers: task_approved (through the Backlog webhook), reminders, escalations, morning digest."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from backlog_bridge.body.issue import parse_issue
from backlog_bridge.models import BacklogEvent
from core.models import TenantMembership
from core.timeutil import JST
from deliveries.scheduler_steps import Pass
from line.models import LinePushSettings
from linepush import producers
from linepush.models import LinePushItem, LinePushProblem
from linepush.producers import digests_produce, escalations_produce, reminders_produce
from linepush.services import PushInvalid, push_enqueue
from tests.helpers.backlog import body, texts
from tests.helpers.console import member
from tests.helpers.factories import ContentTaskFactory, TenantFactory
from tests.helpers.linepush import PUSH, enqueue, group, step

pytestmark = pytest.mark.django_db
GROUP = "C0123456789abcdef0123456789abcdef"
NOW = datetime(2026, 12, 9, 12, 0, tzinfo=JST)


def with_group(description: str, group_id: str = GROUP) -> str:
    return description.replace("## 配信メタ\n", f"## 配信メタ\n- 連絡グループ: {group_id}\n")


def task(
    tenant,
    *,
    status: str = "automedia承認",
    publish_at: datetime | None = None,
    group_id: str = GROUP,
    **fields,
):
    return ContentTaskFactory(
        tenant=tenant,
        summary=fields.pop("summary", "年末告知"),
        status_name=status,
        publish_at=publish_at,
        parsed={"contact_group": group_id} if group_id else {},
        **fields,
    )


def items(trigger: str) -> list[LinePushItem]:
    return list(LinePushItem.objects.filter(trigger_type=trigger).order_by("id"))


# -- the 連絡グループ item of 配信メタ ------------------------------------------------------------


def test_the_parser_reads_an_optional_contact_group():
    parsed = parse_issue(description=with_group(body()))

    assert parsed.ok and parsed.contact_group == GROUP
    assert parse_issue(description=body()).contact_group == ""
    assert parse_issue(description=with_group(body(), "なし")).contact_group == ""


def test_the_parser_reports_a_contact_group_that_is_not_a_group_id():
    parsed = parse_issue(description=with_group(body(), "撮影チーム"))

    assert parsed.errors == [
        "連絡グループ「撮影チーム」は LINE のグループID ではありません（C で始まる ID、例: - 連絡グループ: C4af4980629…）。"
    ]


# -- task_approved ------------------------------------------------------------------------------


@pytest.fixture
def approve(fake_backlog, tenant, pump):
    def run(description: str) -> str:
        with time_machine.travel(datetime(2026, 12, 1, 9, 0, tzinfo=JST), tick=False):
            key = fake_backlog.create_issue(
                "ACME", summary="年末告知", description=description, status="処理中"
            )["issueKey"]
            fake_backlog.update_issue(key, status="automedia承認")
            pump(tenant)
        return key

    return run


def test_an_approved_task_with_a_contact_group_is_posted_to_the_group(approve, tenant, line):
    group(tenant, GROUP, triggers=["task_approved"])

    key = approve(with_group(body()))

    [item] = items("task_approved")
    assert item.dedupe_key == f"task_approved:acme:{key}:1"
    assert (item.ext_group_id, item.status, item.source_table, item.source_id) == (
        GROUP,
        "pending",
        "content_task",
        key,
    )
    assert item.payload == [
        {
            "type": "text",
            "text": f"【タスク承認】「年末告知」を承りました。\n投稿予定: 12月10日(木) 10:00\n（{key}）",
        }
    ]
    with time_machine.travel(datetime(2026, 12, 1, 9, 0, 1, tzinfo=JST)):
        step()
    assert line.sent(PUSH)[0].body["to"] == GROUP


def test_a_task_without_a_contact_group_posts_nothing(approve, tenant):
    approve(body())

    assert not LinePushItem.objects.exists()


def test_the_approval_signal_reads_nothing_for_a_task_naming_no_group(tenant, django_assert_num_queries):
    """The scan's rescues send it thousands of times: the task it is given is the one just
    registered, so no group there means no post, without reading the task again."""
    without = task(tenant, group_id="")
    with django_assert_num_queries(0):
        producers.task_approved_received(sender=None, task=without)

    group(tenant, GROUP, triggers=["task_approved"])
    with_one = task(tenant)
    producers.task_approved_received(sender=None, task=with_one)
    assert [i.source_id for i in items("task_approved")] == [with_one.issue_key]


def test_a_repeated_webhook_does_not_post_twice_and_a_reapproval_posts_again(
    approve, fake_backlog, tenant, pump
):
    group(tenant, GROUP, triggers=["task_approved"])
    key = approve(with_group(body()))
    fake_backlog.update_issue(key, status="automediaエラー")
    pump(tenant)
    fake_backlog.update_issue(key, status="automedia承認")
    pump(tenant)

    assert [i.dedupe_key for i in items("task_approved")] == [
        f"task_approved:acme:{key}:1",
        f"task_approved:acme:{key}:2",
    ]


# -- reminders -------------------------------------------------------------------------------------


def test_reminders_cover_tasks_due_in_the_next_24_hours_once(tenant):
    group(tenant, GROUP)
    due = task(tenant, publish_at=datetime(2026, 12, 10, 10, 0, tzinfo=JST), summary="撮影")
    task(tenant, publish_at=NOW + timedelta(hours=26))  # too far (also an hour later)
    task(tenant, publish_at=NOW + timedelta(hours=2), delivered_at=NOW)  # already delivered
    task(tenant, publish_at=NOW + timedelta(hours=2), group_id="")  # no group

    assert reminders_produce(now=NOW) == 1
    assert reminders_produce(now=NOW + timedelta(hours=1)) == 0  # hourly: idempotent

    [item] = items("reminder")
    assert item.dedupe_key == f"reminder:acme:{due.issue_key}:2026-12-10"
    assert (
        item.payload[0]["text"] == f"【リマインダー】明日 10:00 「撮影」の投稿予定です。\n（{due.issue_key}）"
    )


def test_a_reminder_for_later_today_says_today(tenant):
    group(tenant, GROUP)
    task(tenant, publish_at=NOW + timedelta(hours=3))

    reminders_produce(now=NOW)

    assert items("reminder")[0].payload[0]["text"].startswith("【リマインダー】本日 15:00 ")


# -- escalations -------------------------------------------------------------------------------------


def test_escalations_cover_error_tasks_left_alone_and_overdue_approvals(tenant):
    group(tenant, GROUP)
    stuck = task(tenant, status="automediaエラー", last_synced_at=NOW - timedelta(hours=30))
    task(tenant, status="automediaエラー", last_synced_at=NOW - timedelta(hours=2))  # recent: not yet
    overdue = task(tenant, publish_at=NOW - timedelta(hours=2))
    task(tenant, publish_at=NOW - timedelta(minutes=20))  # within the hour's grace

    assert escalations_produce(now=NOW) == 2
    assert escalations_produce(now=NOW) == 0

    first, second = items("escalation")
    assert first.dedupe_key == f"escalation:acme:{stuck.issue_key}:2026-12-09"
    assert "配信エラーのまま 30 時間が経過しています" in first.payload[0]["text"]
    assert second.source_id == overdue.issue_key
    assert "投稿予定 12月9日(水) 10:00 を過ぎても配信されていません" in second.payload[0]["text"]
    assert {first.status, second.status} == {"waiting_approval"}  # escalations wait for a manager


# -- morning digest ------------------------------------------------------------------------------------


def test_the_morning_digest_is_queued_for_08_00_with_the_groups_tasks(tenant, line):
    group(tenant, GROUP, triggers=["morning_digest"])
    group(tenant, "Cnodigest", triggers=["reminder"])
    task(tenant, publish_at=datetime(2026, 12, 10, 15, 0, tzinfo=JST), summary="特番告知")
    task(
        tenant,
        status="automedia実行済み",
        publish_at=datetime(2026, 12, 10, 9, 0, tzinfo=JST),
        summary="朝の告知",
    )
    task(tenant, publish_at=datetime(2026, 12, 11, 9, 0, tzinfo=JST), summary="翌日分")
    task(tenant, publish_at=datetime(2026, 12, 10, 9, 0, tzinfo=JST), group_id="Cnodigest")

    assert digests_produce(now=datetime(2026, 12, 10, 6, 0, tzinfo=JST)) == 0  # too early
    assert digests_produce(now=datetime(2026, 12, 10, 7, 5, tzinfo=JST)) == 1
    assert digests_produce(now=datetime(2026, 12, 10, 8, 5, tzinfo=JST)) == 0

    [item] = items("morning_digest")
    assert item.dedupe_key == f"morning_digest:acme:{GROUP}:2026-12-10"
    assert item.scheduled_at == datetime(2026, 12, 10, 8, 0, tzinfo=JST)
    text = item.payload[0]["text"]
    assert text.startswith("【本日の配信予定】12月10日(木)\n・09:00 朝の告知（")
    assert "・15:00 特番告知（" in text and "翌日分" not in text
    with time_machine.travel(datetime(2026, 12, 10, 8, 0, 0, 300000, tzinfo=JST)):
        assert step() is Pass.WORKED
    assert line.sent(PUSH)[0].body["to"] == GROUP


def test_the_digest_follows_the_tenants_time_zone(tenant):
    LinePushSettings.objects.create(tenant=tenant, timezone="Asia/Bangkok")  # UTC+7
    group(tenant, GROUP, triggers=["morning_digest"])
    task(tenant, publish_at=datetime(2026, 12, 10, 15, 0, tzinfo=JST))

    assert digests_produce(now=datetime(2026, 12, 10, 9, 5, tzinfo=JST)) == 1  # 07:05 in Bangkok
    assert items("morning_digest")[0].scheduled_at == datetime(2026, 12, 10, 10, 0, tzinfo=JST)


# -- one post that cannot be queued never stops the others ------------------------------------------


@pytest.fixture
def fail_for(monkeypatch):
    """push_enqueue fails for dedupe keys containing one of `marks` (a bad post in a batch)."""

    def arm(*marks: str, error: Exception | None = None) -> None:
        def enqueue_or_fail(**fields):
            if any(mark in fields["dedupe_key"] for mark in marks):
                raise error or RuntimeError("database is on fire")
            return push_enqueue(**fields)

        monkeypatch.setattr(producers, "push_enqueue", enqueue_or_fail)

    return arm


def problem_of(source_id: str) -> tuple:
    row = LinePushProblem.objects.get(source_id=source_id)
    return row.tenant.slug, row.trigger_type, row.source_table, row.error, row.occurrences


def test_it_queues_the_other_reminders_when_one_fails_and_records_the_problem_on_its_task(
    tenant, fail_for, monkeypatch
):
    group(tenant, GROUP)
    first, bad, last = (task(tenant, publish_at=NOW + timedelta(hours=h)) for h in (2, 3, 4))
    fail_for(bad.issue_key, error=PushInvalid(["メッセージが長すぎます。"]))

    assert reminders_produce(now=NOW) == 2

    assert [i.source_id for i in items("reminder")] == [first.issue_key, last.issue_key]
    assert problem_of(bad.issue_key) == ("acme", "reminder", "content_task", "メッセージが長すぎます。", 1)
    reminders_produce(now=NOW)
    assert problem_of(bad.issue_key)[-1] == 2  # one row per source, counted
    monkeypatch.undo()
    assert reminders_produce(now=NOW) == 1  # fixed: queued, and the problem goes away
    assert not LinePushProblem.objects.exists()


def test_an_unexpected_error_is_logged_and_shown_without_its_text(tenant, fail_for, caplog):
    group(tenant, GROUP)
    bad, good = (
        task(tenant, publish_at=NOW + timedelta(hours=2)),
        task(tenant, publish_at=NOW + timedelta(hours=3)),
    )
    fail_for(bad.issue_key)

    assert reminders_produce(now=NOW) == 1

    assert items("reminder")[0].source_id == good.issue_key
    error = problem_of(bad.issue_key)[3]
    assert "内部エラー" in error and "fire" not in error  # the details are in the log only
    assert (
        "database is on fire" in caplog.text and f"acme reminder content_task:{bad.issue_key}" in caplog.text
    )


def test_it_queues_the_other_escalations_when_one_fails(tenant, fail_for):
    group(tenant, GROUP)
    stuck = task(tenant, status="automediaエラー", last_synced_at=NOW - timedelta(hours=30))
    bad = task(tenant, status="automediaエラー", last_synced_at=NOW - timedelta(hours=30))
    overdue = task(tenant, publish_at=NOW - timedelta(hours=2))
    fail_for(bad.issue_key)

    assert escalations_produce(now=NOW) == 2

    assert [i.source_id for i in items("escalation")] == [stuck.issue_key, overdue.issue_key]
    assert problem_of(bad.issue_key)[:3] == ("acme", "escalation", "content_task")


def test_it_queues_the_other_digests_when_one_group_fails(tenant, fail_for):
    other_group = "C" + "f" * 32
    for group_id in (GROUP, other_group):
        group(tenant, group_id, triggers=["morning_digest"])
        task(tenant, publish_at=datetime(2026, 12, 10, 15, 0, tzinfo=JST), group_id=group_id)
    fail_for(GROUP)

    assert digests_produce(now=datetime(2026, 12, 10, 7, 5, tzinfo=JST)) == 1

    assert [i.ext_group_id for i in items("morning_digest")] == [other_group]
    assert problem_of(GROUP)[:3] == ("acme", "morning_digest", "line_source")


def test_another_tenants_item_with_a_guessed_key_blocks_no_reminder(tenant):
    """automedia's keys are guessable; another tenant taking one first used to stop the run."""
    group(tenant, GROUP)
    due = task(tenant, publish_at=datetime(2026, 12, 10, 10, 0, tzinfo=JST))
    other = TenantFactory(slug="other")
    enqueue(other, group(other), key=f"reminder:acme:{due.issue_key}:2026-12-10")

    assert reminders_produce(now=NOW) == 1

    [mine] = LinePushItem.objects.filter(tenant=tenant)
    assert mine.dedupe_key == f"reminder:acme:{due.issue_key}:2026-12-10"


def test_an_approval_is_scheduled_and_commented_when_its_group_post_fails(
    approve, fake_backlog, tenant, fail_for
):
    group(tenant, GROUP, triggers=["task_approved"])
    fail_for("task_approved:")

    key = approve(with_group(body()))

    assert any("配信を予約しました" in t for t in texts(fake_backlog, key))
    assert not BacklogEvent.objects.filter(outcome=BacklogEvent.Outcome.FAILED).exists()
    assert problem_of(key)[:3] == ("acme", "task_approved", "content_task")
    assert not items("task_approved")


def test_an_approval_posts_even_if_another_tenant_took_its_key_first(approve, fake_backlog, tenant):
    group(tenant, GROUP, triggers=["task_approved"])
    other = TenantFactory(slug="other")
    enqueue(other, group(other), key="task_approved:acme:ACME-1:1")

    key = approve(with_group(body()))

    assert key == "ACME-1"
    assert any("配信を予約しました" in t for t in texts(fake_backlog, key))
    assert not BacklogEvent.objects.filter(outcome=BacklogEvent.Outcome.FAILED).exists()
    assert LinePushItem.objects.get(tenant=tenant).dedupe_key == "task_approved:acme:ACME-1:1"


def test_a_manager_sees_the_problems_of_their_own_tenant_only_and_cannot_edit_them(client, tenant, fail_for):
    group(tenant, GROUP)
    bad = task(tenant, publish_at=NOW + timedelta(hours=2), summary="自社")
    fail_for(bad.issue_key)
    reminders_produce(now=NOW)
    other = TenantFactory(slug="other")
    LinePushProblem.objects.create(
        tenant=other,
        trigger_type="reminder",
        source_table="content_task",
        source_id="OTHER-9",
        error="x",
        last_seen_at=NOW,
    )
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))

    page = client.get(reverse("admin:linepush_linepushproblem_changelist")).content.decode()

    assert bad.issue_key in page and "OTHER-9" not in page
    mine = LinePushProblem.objects.get(tenant=tenant)
    assert client.get(reverse("admin:linepush_linepushproblem_add")).status_code == 403
    url = reverse("admin:linepush_linepushproblem_change", args=[mine.pk])
    assert 'name="_save"' not in client.get(url).content.decode()
    assert (
        client.post(
            reverse("admin:linepush_linepushproblem_delete", args=[mine.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert LinePushProblem.objects.filter(pk=mine.pk).exists()

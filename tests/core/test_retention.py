"""core/retention.py and `manage.py prune_records`: what each rule removes, in batches,
what it keeps (pending and failed work, recent rows), --dry-run, two prunes at once, and
the daily schedule created on migrate."""

from __future__ import annotations

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import Schedule

from backlog_bridge.models import AIReview, BacklogEvent, CommandRun
from console.models import DeliveryOutcome
from core.retention import RetentionRule, records_prune, retention_rules
from deliveries.models import DeliveryAttempt, DeliverySchedule
from line.models import LineWebhookEvent
from linepush.models import LinePushAttempt, LinePushItem
from tests.helpers.factories import ContentTaskFactory, TenantFactory

pytestmark = pytest.mark.django_db

OLD = timedelta(days=31)
AUDIT_OLD = timedelta(days=401)
Outcome = BacklogEvent.Outcome


def backlog_events(tenant, outcome: str, count: int, age: timedelta = OLD) -> list[int]:
    start = BacklogEvent.objects.count() + 1
    rows = BacklogEvent.objects.bulk_create(
        BacklogEvent(tenant=tenant, activity_id=start + n, type=2, payload={}, outcome=outcome)
        for n in range(count)
    )
    ids = [r.pk for r in rows]
    BacklogEvent.objects.filter(pk__in=ids).update(received_at=timezone.now() - age)
    return ids


def line_event(tenant, outcome: str, age: timedelta = OLD, n: int = 0) -> LineWebhookEvent:
    row = LineWebhookEvent.objects.create(
        tenant=tenant, webhook_event_id=f"e{outcome}{n}{age.days}", type="follow", payload={}, outcome=outcome
    )
    LineWebhookEvent.objects.filter(pk=row.pk).update(received_at=timezone.now() - age)
    return row


def aged(model, row, age: timedelta, field: str = "created_at"):
    model.objects.filter(pk=row.pk).update(**{field: timezone.now() - age})
    return row


def remaining(model) -> set[int]:
    return set(model.objects.values_list("pk", flat=True))


@pytest.fixture
def tenant(db):
    return TenantFactory(slug="shop")


def test_it_registers_a_rule_for_every_table_the_policy_names():
    tables = {(r.table, r.verb) for r in retention_rules()}

    assert tables == {
        ("backlog_bridge_backlogevent", "deleted"),
        ("backlog_bridge_commandrun", "deleted"),
        ("backlog_bridge_aireview", "deleted"),
        ("deliveries_deliveryattempt", "deleted"),
        ("linepush_linewebhookevent", "deleted"),
        ("linepush_linewebhookevent", "text blanked"),
        ("linepush_linepushattempt", "deleted"),
        ("linepush_linecontact", "profile removed"),
        ("linepush_lineanswer", "deleted"),
        ("linepush_lineanswer", "text blanked"),
        ("console_deliveryoutcome", "deleted"),
        ("deliveries_channelpost", "user ids dropped"),
    }


def test_it_deletes_old_processed_events_and_keeps_pending_failed_and_recent_ones(tenant):
    old_done = backlog_events(tenant, Outcome.DONE, 2) + backlog_events(tenant, Outcome.IGNORED, 1)
    old_rejected = backlog_events(tenant, Outcome.REJECTED, 1)
    kept = (
        backlog_events(tenant, Outcome.PENDING, 1)
        + backlog_events(tenant, Outcome.FAILED, 1)
        + backlog_events(tenant, Outcome.DONE, 1, age=timedelta(days=29))
    )
    line_old = [line_event(tenant, o) for o in (Outcome.DONE, Outcome.IGNORED, Outcome.REJECTED)]
    line_kept = [line_event(tenant, o) for o in (Outcome.PENDING, Outcome.FAILED)]
    line_kept.append(line_event(tenant, Outcome.DONE, age=timedelta(days=1)))

    records_prune()

    assert remaining(BacklogEvent) == set(kept)
    assert not remaining(BacklogEvent) & set(old_done + old_rejected)
    assert remaining(LineWebhookEvent) == {e.pk for e in line_kept}
    assert not remaining(LineWebhookEvent) & {e.pk for e in line_old}


def test_it_deletes_the_audit_trail_after_its_period(tenant):
    task = ContentTaskFactory(tenant=tenant)
    old_run = aged(
        CommandRun,
        CommandRun.objects.create(tenant=tenant, issue_key="A-1", comment_id=1, verb="x"),
        AUDIT_OLD,
    )
    new_run = CommandRun.objects.create(tenant=tenant, issue_key="A-1", comment_id=2, verb="x")
    old_review = aged(AIReview, AIReview.objects.create(tenant=tenant, issue_key="A-1", model="m"), AUDIT_OLD)
    new_review = AIReview.objects.create(tenant=tenant, issue_key="A-1", model="m")
    old_outcome = aged(
        DeliveryOutcome, DeliveryOutcome.objects.create(tenant=tenant, task=task, kind="sent"), AUDIT_OLD
    )
    new_outcome = DeliveryOutcome.objects.create(tenant=tenant, task=task, kind="sent")

    records_prune()

    assert remaining(CommandRun) == {new_run.pk} and old_run.pk not in remaining(CommandRun)
    assert remaining(AIReview) == {new_review.pk} and old_review.pk not in remaining(AIReview)
    assert remaining(DeliveryOutcome) == {new_outcome.pk} and old_outcome.pk not in remaining(DeliveryOutcome)


def delivery_attempt(task, age: timedelta) -> DeliveryAttempt:
    row = DeliveryAttempt.objects.create(
        tenant=task.tenant,
        task=task,
        approval_seq=1,
        channel="line",
        endpoint="/v2/bot/message/push",
        outcome="sent",
    )
    return aged(DeliveryAttempt, row, age)


def test_it_keeps_the_attempts_of_open_work_whatever_their_age(tenant):
    finished, still_open = ContentTaskFactory(tenant=tenant), ContentTaskFactory(tenant=tenant)
    DeliverySchedule.objects.create(
        tenant=tenant,
        task=still_open,
        name="open",
        due_at=timezone.now(),
        stage=DeliverySchedule.Stage.DELIVER,
    )
    gone, recent = delivery_attempt(finished, AUDIT_OLD), delivery_attempt(finished, timedelta(days=10))
    kept_open = delivery_attempt(still_open, AUDIT_OLD)
    items = {
        status: LinePushItem.objects.create(
            tenant=tenant,
            ext_group_id="C1",
            trigger_type="reminder",
            payload=[],
            dedupe_key=status,
            scheduled_at=timezone.now(),
            status=status,
        )
        for status in ("sent", "pending", "failed", "held")
    }
    pushes = {
        status: aged(
            LinePushAttempt,
            LinePushAttempt.objects.create(item=item, outcome="sent", retry_key="k"),
            AUDIT_OLD,
        )
        for status, item in items.items()
    }

    records_prune()

    assert remaining(DeliveryAttempt) == {recent.pk, kept_open.pk} and gone.pk not in remaining(
        DeliveryAttempt
    )
    assert remaining(LinePushAttempt) == {pushes[s].pk for s in ("pending", "failed", "held")}
    assert LinePushItem.objects.count() == 4  # the posts themselves stay


def test_it_deletes_in_batches_of_the_setting_each_its_own_transaction(tenant, settings):
    settings.RETENTION_BATCH_SIZE, settings.RETENTION_BATCH_PAUSE_SECONDS = 4, 0
    backlog_events(tenant, Outcome.DONE, 10)

    with CaptureQueriesContext(connection) as queries:
        records_prune()

    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE") and "backlogevent" in q["sql"]]
    assert len(deletes) == 3  # 4 + 4 + 2 rows
    assert BacklogEvent.objects.count() == 0


def test_it_counts_without_changing_anything_on_a_dry_run(tenant):
    backlog_events(tenant, Outcome.DONE, 3)
    backlog_events(tenant, Outcome.PENDING, 2)
    out = StringIO()

    call_command("prune_records", "--dry-run", stdout=out)

    assert "backlog_bridge_backlogevent  would be deleted: 3" in out.getvalue()
    assert BacklogEvent.objects.count() == 5


def test_it_prints_what_it_deleted_per_table(tenant):
    backlog_events(tenant, Outcome.DONE, 3)
    line_event(tenant, Outcome.DONE)
    out = StringIO()

    call_command("prune_records", stdout=out)

    lines = out.getvalue().splitlines()
    assert "backlog_bridge_backlogevent  deleted: 3" in lines
    assert "linepush_linewebhookevent    deleted: 1" in lines
    assert "backlog_bridge_commandrun    deleted: 0" in lines
    assert len(lines) == len(retention_rules())


def test_a_rule_that_changes_nothing_stops_instead_of_looping(tenant, settings):
    settings.RETENTION_BATCH_SIZE = 2
    backlog_events(tenant, Outcome.DONE, 5)
    never = RetentionRule("x", lambda now: BacklogEvent.objects.all(), strip=lambda row: [], verb="kept")

    from core import retention

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(retention, "_RULES", [never])
        assert records_prune() == [("x", "kept", 0)]


def test_the_daily_schedule_exists_after_migrate():
    schedule = Schedule.objects.get(name="automedia-prune-records")

    assert schedule.func == "core.retention.records_prune_scheduled"
    assert schedule.schedule_type == Schedule.DAILY
    assert schedule.repeats == -1


def test_the_scheduled_task_prunes_and_reports(tenant):
    from core.retention import records_prune_scheduled

    backlog_events(tenant, Outcome.DONE, 2)

    assert "backlog_bridge_backlogevent deleted 2" in records_prune_scheduled()
    assert BacklogEvent.objects.count() == 0


def test_a_prune_between_another_prunes_batches_takes_the_rest_and_neither_fails(
    tenant, settings, monkeypatch
):
    # SQLite lets one writer in at a time (each batch an IMMEDIATE transaction): two prunes
    # at once interleave at batch boundaries, which is what this plays out.
    settings.RETENTION_BATCH_SIZE, settings.RETENTION_BATCH_PAUSE_SECONDS = 4, 0.01
    backlog_events(tenant, Outcome.DONE, 10)
    kept = backlog_events(tenant, Outcome.PENDING, 2)
    second, started = [], []

    def pause(seconds):
        if not started:
            started.append(True)
            second.append(records_prune())

    monkeypatch.setattr("core.retention.time.sleep", pause)
    first = records_prune()

    deleted = {t: n for t, v, n in first if v == "deleted"}["backlog_bridge_backlogevent"]
    deleted += {t: n for t, v, n in second[0] if v == "deleted"}["backlog_bridge_backlogevent"]
    assert deleted == 10
    assert remaining(BacklogEvent) == set(kept)


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the tests' in-memory SQLite refuses a second connection's write instead of waiting",
)
@pytest.mark.django_db(transaction=True)
def test_two_prunes_at_once_both_finish_and_delete_each_row_once(settings):
    settings.RETENTION_BATCH_SIZE, settings.RETENTION_BATCH_PAUSE_SECONDS = 50, 0
    tenant = TenantFactory(slug="shop")
    backlog_events(tenant, Outcome.DONE, 600)
    kept = backlog_events(tenant, Outcome.PENDING, 5)
    results, errors = [], []
    start = threading.Barrier(2)

    def prune():
        try:
            start.wait(10)
            results.append(dict(((t, v), n) for t, v, n in records_prune()))
        except Exception as exc:  # the test fails on it below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=prune) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert errors == []
    assert sum(r[("backlog_bridge_backlogevent", "deleted")] for r in results) == 600
    assert remaining(BacklogEvent) == set(kept)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: SQLite has one write lock")
@pytest.mark.django_db(transaction=True)
def test_a_prune_on_postgresql_skips_rows_another_holds_instead_of_waiting(settings):
    settings.RETENTION_BATCH_SIZE, settings.RETENTION_BATCH_PAUSE_SECONDS = 100, 0
    tenant = TenantFactory(slug="shop")
    held, *others = backlog_events(tenant, Outcome.DONE, 5)
    locked, release = threading.Event(), threading.Event()

    def other_prune_holds_one():
        with transaction.atomic():
            BacklogEvent.objects.select_for_update().get(pk=held)
            locked.set()
            release.wait(10)
        connection.close()

    other = threading.Thread(target=other_prune_holds_one)
    other.start()
    try:
        assert locked.wait(10)
        records_prune()  # would wait on the held row without SKIP LOCKED
    finally:
        release.set()
        other.join()

    assert remaining(BacklogEvent) == {held}


def test_a_run_with_a_time_budget_stops_between_batches_once_it_is_spent(tenant, settings):
    settings.RETENTION_BATCH_SIZE, settings.RETENTION_BATCH_PAUSE_SECONDS = 2, 0
    backlog_events(tenant, Outcome.DONE, 6)

    first = records_prune(budget_s=0)

    assert ("backlog_bridge_backlogevent", "deleted", 2) in first  # one batch, then out of time
    assert BacklogEvent.objects.count() == 4
    records_prune()
    assert BacklogEvent.objects.count() == 0

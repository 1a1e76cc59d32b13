"""The scan's rescue of a page of leaks (deliveries/safety_net/rescue.py): new registrations written
together, everything else through issue_reconcile, one re-read and one comment each."""

from __future__ import annotations

from datetime import datetime

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from backlog_bridge.client import BacklogClient
from core.timeutil import JST
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.safety_net import rescue
from deliveries.safety_net.scan import scan_all, scan_tenant
from linepush.models import LinePushItem
from tests.helpers.backlog import body, second_tenant, texts
from tests.helpers.linepush import group

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
APPROVED = "automedia承認"
BOOKED = "配信を予約しました"
GROUP = "C0123456789abcdef0123456789abcdef"


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def no_line(tenant):
    """No LINE token: the checks count no other approval, so leaks are registered together."""
    tenant.line_channel_token = ""
    tenant.save()
    return tenant


def leak(fake_backlog, project: str = "ACME", description: str | None = None) -> str:
    issue = fake_backlog.create_issue(
        project, summary="取りこぼし", description=description or body(), status=APPROVED
    )
    fake_backlog.outbox.clear()
    return issue["issueKey"]


def booked(fake_backlog, key: str) -> list[str]:
    return [t for t in texts(fake_backlog, key) if BOOKED in t]


def gets_of(fake_backlog, key: str) -> int:
    return sum(r.method == "GET" and r.path == f"/api/v2/issues/{key}" for r in fake_backlog.requests)


def scan(tenant):
    with BacklogClient.for_tenant(tenant) as client:
        return scan_tenant(tenant=tenant, client=client, dry_run=False)


def test_a_page_of_leaks_is_registered_with_a_few_statements_one_read_and_one_comment_each(
    fake_backlog, no_line
):
    keys = [leak(fake_backlog) for _ in range(30)]

    with CaptureQueriesContext(connection) as queries:
        result = scan(no_line)

    assert (result.rescued, result.errors, result.unrescued) == (30, [], {})
    # 30 leaks one by one took about 15 statements each; together a few for the page.
    assert len(queries) <= 12
    assert [gets_of(fake_backlog, k) for k in keys] == [1] * 30
    assert [len(booked(fake_backlog, k)) for k in keys] == [1] * 30
    schedules = DeliverySchedule.objects.filter(task__issue_key__in=keys)
    assert sorted(s.task.issue_key for s in schedules) == sorted(keys)
    assert {(s.reason, s.due_at) for s in schedules} == {("scan", datetime(2026, 12, 10, 10, 0, tzinfo=JST))}


def test_a_rescued_task_holds_what_a_rescue_one_by_one_writes(fake_backlog, no_line, monkeypatch):
    together = leak(fake_backlog)
    scan(no_line)
    alone = leak(fake_backlog)
    monkeypatch.setattr(rescue, "_plan", lambda *args: None)  # every leak through issue_reconcile
    scan(no_line)

    def row(key: str) -> dict:
        task = ContentTask.objects.get(issue_key=key)
        schedule = DeliverySchedule.objects.get(task=task)
        fields = {f.name: getattr(task, f.name) for f in ContentTask._meta.fields}
        fields |= {f"schedule.{f.name}": getattr(schedule, f.name) for f in DeliverySchedule._meta.fields}
        for name in ("id", "issue_key", "issue_id", "schedule.id", "schedule.task", "schedule.name"):
            fields.pop(name)
        fields["parsed"] = {k: v for k, v in task.parsed.items()}
        return fields

    assert row(together) == row(alone)
    assert row(together)["approval_seq"] == 1 and row(together)["schedule.reason"] == "scan"
    assert booked(fake_backlog, together)[0] == booked(fake_backlog, alone)[0]


def test_a_second_scan_finds_nothing_and_writes_nothing(fake_backlog, no_line):
    keys = [leak(fake_backlog) for _ in range(5)]
    scan(no_line)
    fake_backlog.reset_requests()

    second = scan(no_line)

    assert (second.leaks, second.rescued, second.errors) == ([], 0, [])
    assert [r for r in fake_backlog.requests if r.method != "GET"] == []
    assert DeliverySchedule.objects.count() == 5
    assert [len(booked(fake_backlog, k)) for k in keys] == [1] * 5


def test_a_page_meeting_a_registration_made_meanwhile_keeps_one_schedule_and_one_comment(
    fake_backlog, no_line, monkeypatch
):
    keys = [leak(fake_backlog) for _ in range(3)]
    real_known = rescue._known

    def webhook_first(tenant, states):
        known = real_known(tenant, states)
        # A webhook registers the second one between the scan's look and its INSERT.
        with BacklogClient.for_tenant(tenant) as client:
            rescue.issue_reconcile(tenant=tenant, issue_key=keys[1], client=client)
        return known

    monkeypatch.setattr(rescue, "_known", webhook_first)

    result = scan(no_line)

    assert result.errors == []
    assert DeliverySchedule.objects.filter(task__issue_key__in=keys).count() == 3
    assert ContentTask.objects.filter(issue_key__in=keys).count() == 3
    assert [len(booked(fake_backlog, k)) for k in keys] == [1, 1, 1]
    assert result.rescued == 2 and result.unrescued == {keys[1]: "no change"}


def test_a_refused_leak_and_a_known_task_go_one_by_one_in_page_order(fake_backlog, no_line):
    first = leak(fake_backlog)
    broken = leak(fake_backlog, description=body(when="いつか"))
    known = leak(fake_backlog)
    ContentTask.objects.create(tenant=no_line, issue_key=known)  # a webhook got this far once
    last = leak(fake_backlog)

    result = scan(no_line)

    assert result.rescued == 3 and list(result.unrescued) == [broken]
    assert result.unrescued[broken].startswith("rejected:")
    assert fake_backlog.issue(broken)["status"]["name"] == "automediaエラー"
    assert DeliverySchedule.objects.filter(task__issue_key=broken).count() == 0
    assert [len(booked(fake_backlog, k)) for k in (first, known, last)] == [1, 1, 1]
    assert ContentTask.objects.get(issue_key=known).approval_seq == 1
    # The comments follow the page: the registrations before a one-by-one leak come first.
    writes = [r.path for r in fake_backlog.requests if r.method != "GET"]
    assert writes == [
        f"/api/v2/issues/{first}/comments",
        f"/api/v2/issues/{broken}",
        f"/api/v2/issues/{known}/comments",
        f"/api/v2/issues/{last}/comments",
    ]


def test_a_leak_whose_issue_moved_to_another_tenants_project_is_not_registered(fake_backlog, no_line):
    beta = second_tenant(fake_backlog)
    stays = leak(fake_backlog)
    moves = leak(fake_backlog)
    moved = leak(fake_backlog, "BETA")
    real_get = BacklogClient.get_issue

    def moved_meanwhile(self, key):
        # Listed in ACME, but Backlog now answers with BETA's issue (moved since the listing).
        return real_get(self, moved if key == moves else key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BacklogClient, "get_issue", moved_meanwhile)
        result = scan(no_line)

    assert result.rescued == 1
    assert not ContentTask.objects.filter(tenant=no_line, issue_key=moved).exists()
    assert list(DeliverySchedule.objects.values_list("tenant__slug", "task__issue_key")) == [("acme", stays)]
    (beta_result,) = scan_all(tenants=[beta], dry_run=False)
    assert beta_result.rescued == 1
    assert {(s.tenant_id, s.task.tenant_id) for s in DeliverySchedule.objects.all()} == {
        (no_line.pk, no_line.pk),
        (beta.pk, beta.pk),
    }


def test_each_tenant_registers_only_its_own_leaks_even_with_the_same_issue_ids(fake_backlog, no_line):
    beta = second_tenant(fake_backlog, line_channel_token="")
    acme_key, beta_key = leak(fake_backlog), leak(fake_backlog, "BETA")
    # Another tenant's task holding ACME's issue id (two spaces number ids on their own).
    ContentTask.objects.create(tenant=beta, issue_key="BETA-999", issue_id=fake_backlog.issue(acme_key)["id"])

    results = scan_all(tenants=[no_line, beta], dry_run=False)

    assert [(r.tenant, r.rescued, r.errors) for r in results] == [("acme", 1, []), ("beta", 1, [])]
    pairs = DeliverySchedule.objects.values_list("tenant__slug", "task__tenant__slug", "task__issue_key")
    assert sorted(pairs) == [("acme", "acme", acme_key), ("beta", "beta", beta_key)]


def test_a_rescued_task_naming_a_contact_group_queues_its_group_post(fake_backlog, no_line):
    group(no_line, GROUP, triggers=["task_approved"])
    key = leak(
        fake_backlog, description=body().replace("## 配信メタ\n", f"## 配信メタ\n- 連絡グループ: {GROUP}\n")
    )

    scan(no_line)

    assert list(LinePushItem.objects.values_list("dedupe_key", "ext_group_id")) == [
        (f"task_approved:acme:{key}:1", GROUP)
    ]


def test_leaks_whose_checks_count_the_others_are_registered_one_by_one(fake_backlog, tenant, monkeypatch):
    """With a LINE token each approval's quota forecast counts the ones before it
    (tests/deliveries/test_scan.py has the forecasts): no page-wide INSERT."""
    keys = [leak(fake_backlog) for _ in range(2)]
    bulk = []
    real = rescue._register
    monkeypatch.setattr(rescue, "_register", lambda t, c, batch: bulk.extend(batch) or real(t, c, batch))

    result = scan(tenant)

    assert result.rescued == 2 and bulk == []
    assert [len(booked(fake_backlog, k)) for k in keys] == [1, 1]


def test_a_page_registered_together_is_still_paced_without_a_single_429(fake_backlog, no_line, monkeypatch):
    keys = [leak(fake_backlog) for _ in range(7)]
    fake_backlog.set_rate_limits(read=4, update=3, window=60)
    with time_machine.travel(NOW, tick=False) as traveller:
        monkeypatch.setattr("backlog_bridge.ratelimit._sleep", traveller.shift)
        (result,) = scan_all(tenants=[no_line], dry_run=False)

    assert (result.rescued, result.errors) == (7, [])
    assert fake_backlog.rate_limited == 0 and all(r.status != 429 for r in fake_backlog.requests)
    # 7 re-reads and 7 comments (plus the listing) at 4 reads and 3 writes a minute.
    assert result.rate_limit_wait_s >= 120
    assert [len(booked(fake_backlog, k)) for k in keys] == [1] * 7

"""Failure notices: a delivery ending in automediaエラー, or a channel token found expired, is told
in the task's 連絡グループ as an escalation, once per (task, approval, failure)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine

from core.models import TenantMembership
from core.timeutil import JST
from deliveries.channels.models import ChannelAccount
from deliveries.channels.token_upkeep import channel_tokens_upkeep
from deliveries.models import ContentTask
from deliveries.scheduler_steps import Pass
from deliveries.signals import delivery_failed
from linepush.models import LinePushItem, LineTriggerPolicy
from linepush.services import push_approve
from tests.helpers.backlog import body
from tests.helpers.console import member
from tests.helpers.deliveries import DUE, MULTICAST, fire
from tests.helpers.factories import ContentTaskFactory
from tests.helpers.linepush import PUSH, group, step

pytestmark = pytest.mark.django_db
GROUP = "C0123456789abcdef0123456789abcdef"


def with_group(description: str) -> str:
    return description.replace("## 配信メタ\n", f"## 配信メタ\n- 連絡グループ: {GROUP}\n")


@pytest.fixture
def manager(tenant):
    return member("yamada", tenant, TenantMembership.Role.MANAGER)


def notices() -> list[LinePushItem]:
    return list(LinePushItem.objects.filter(trigger_type="escalation").order_by("id"))


def posted_to_group(line) -> list[str]:
    """Texts of the pushes the fake LINE received for the group."""
    return [r.body["messages"][0]["text"] for r in line.sent(PUSH) if r.body["to"] == GROUP]


def send_queue(when: datetime) -> None:
    with time_machine.travel(when, tick=False):
        while step() is Pass.WORKED:
            pass


def test_it_posts_one_escalation_when_a_delivery_ends_in_error_after_its_retries(
    approved, tenant, line, manager
):
    group(tenant, GROUP, triggers=["escalation"])
    key = approved(with_group(body()))
    line.fail_next(500, count=6, path_prefix=MULTICAST)

    results = [fire(key) for _ in range(6)]

    assert results[-1] == "failed" and all(r.startswith("retry in") for r in results[:-1])
    [notice] = notices()
    assert notice.dedupe_key == f"escalation:failure:acme:{key}:1:error"
    assert notice.ext_group_id == GROUP and notice.status == "waiting_approval"  # escalations' default
    assert push_approve(item=notice, user=manager)
    send_queue(DUE + timedelta(hours=3))
    [text] = posted_to_group(line)
    assert text.startswith(
        f"【配信エラー】「年末告知」（{key}）の配信が失敗しました（automediaエラー）。\n理由: 再試行の上限"
    )
    assert text.endswith(f"\n{tenant.backlog_base_url}/view/{key}")


def test_a_repeated_failure_of_the_same_approval_posts_nothing_more(approved, tenant, line):
    group(tenant, GROUP, triggers=["escalation"])
    key = approved(with_group(body()))
    line.fail_next(400, path_prefix=MULTICAST)
    assert fire(key) == "failed"
    task = ContentTask.objects.get(issue_key=key)

    # a write-back repeated after a crash, a scan rescue failing again: the same approval
    delivery_failed.send(ContentTask, task=task, reason="別の理由", auth=False)
    delivery_failed.send(ContentTask, task=task, reason="別の理由", auth=False)

    assert len(notices()) == 1
    ContentTask.objects.filter(pk=task.pk).update(approval_seq=2)  # a new approval fails: told again
    delivery_failed.send(ContentTask, task=task, reason="別の理由", auth=False)
    assert [n.dedupe_key.rsplit(":", 2)[1] for n in notices()] == ["1", "2"]


def test_it_posts_nothing_when_the_group_does_not_opt_in_to_escalations(approved, tenant, line):
    group(tenant, GROUP, triggers=["task_approved"])
    key = approved(with_group(body()))
    line.fail_next(400, path_prefix=MULTICAST)

    assert fire(key) == "failed"

    [notice] = notices()
    assert notice.status == "skipped"
    send_queue(DUE + timedelta(hours=3))
    assert not [t for t in posted_to_group(line) if "配信エラー" in t]


def test_it_sends_without_a_manager_when_the_tenant_lets_escalations_go(approved, tenant, line):
    LineTriggerPolicy.objects.create(tenant=tenant, trigger_type="escalation", requires_approval=False)
    group(tenant, GROUP, triggers=["escalation"])
    key = approved(with_group(body()))
    line.fail_next(400, path_prefix=MULTICAST)

    fire(key)

    assert [n.status for n in notices()] == ["pending"]
    send_queue(DUE + timedelta(hours=3))
    assert [t for t in posted_to_group(line) if t.startswith("【配信エラー】")]


def test_a_task_without_a_contact_group_posts_no_notice(approved, tenant, line):
    group(tenant, GROUP, triggers=["escalation"])
    key = approved()
    line.fail_next(400, path_prefix=MULTICAST)

    assert fire(key) == "failed"
    assert notices() == []


def test_an_expired_line_token_is_told_once(approved, tenant, line):
    group(tenant, GROUP, triggers=["escalation"])
    key = approved(with_group(body()))
    line.fail_next(401, path_prefix=MULTICAST)

    assert fire(key) == "failed"

    [notice] = notices()  # the token notice and the failure of the same send: one post
    assert notice.dedupe_key == f"escalation:failure:acme:{key}:1:token"
    text = notice.payload[0]["text"]
    assert text.startswith(
        f"【配信エラー】LINE のトークンが期限切れか無効です。「年末告知」（{key}）は配信されません。"
    )
    assert "理由: 認証エラー（401）" in text and text.endswith(f"/view/{key}")


def test_a_token_found_expired_by_the_daily_refresh_tells_the_tasks_waiting_on_it(tenant):
    now = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
    group(tenant, GROUP, triggers=["escalation"])
    ChannelAccount.objects.create(
        tenant=tenant, channel="instagram", access_token="ig", expires_at=now - timedelta(days=1)
    )
    waiting = ContentTaskFactory(
        tenant=tenant,
        channel="instagram",
        status_name="automedia承認",
        approval_seq=1,
        parsed={"contact_group": GROUP},
    )
    ContentTaskFactory(
        tenant=tenant, channel="line", status_name="automedia承認", parsed={"contact_group": GROUP}
    )

    with time_machine.travel(now, tick=False):
        channel_tokens_upkeep(now=now)

    [notice] = notices()
    assert notice.dedupe_key == f"escalation:failure:acme:{waiting.issue_key}:1:token"
    assert "Instagram のトークンが期限切れか無効です" in notice.payload[0]["text"]
    assert "長期トークンの有効期限" in notice.payload[0]["text"]

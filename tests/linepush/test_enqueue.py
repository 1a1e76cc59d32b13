"""push_enqueue: dedupe, opt-in, approval policy, validation; approval and rejection in the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from deliveries.scheduler_steps import Pass
from linepush.models import LinePushItem, LineTriggerPolicy
from linepush.services import PushInvalid, push_enqueue
from tests.helpers.factories import TenantFactory
from tests.helpers.linepush import PUSH, enqueue, group, reload, shop, step

pytestmark = pytest.mark.django_db
Status = LinePushItem.Status


@pytest.fixture
def tenant(db):
    return shop()


def test_it_returns_the_existing_item_for_a_known_dedupe_key(tenant):
    team = group(tenant)
    first = enqueue(tenant, team, key="task:abc-123:approved", text="一回目")

    again, created = push_enqueue(
        tenant=tenant,
        ext_group_id=team.group_id,
        trigger_type="task_approved",
        payload=[{"type": "text", "text": "二回目"}],
        dedupe_key="task:abc-123:approved",
    )

    assert (again.pk, created) == (first.pk, False)
    assert LinePushItem.objects.count() == 1
    assert reload(first).payload == [{"type": "text", "text": "一回目"}]


def test_it_keeps_dedupe_keys_per_tenant(tenant):
    mine = enqueue(tenant, group(tenant), key="shared-key", text="acme")
    other = TenantFactory(slug="other")

    theirs = enqueue(other, group(other), key="shared-key", text="other")

    assert theirs.pk != mine.pk and theirs.tenant == other
    assert reload(mine).payload == [{"type": "text", "text": "acme"}]
    assert enqueue(other, group(other), key="shared-key").pk == theirs.pk  # same tenant, same key


def test_it_skips_a_group_that_does_not_allow_pushes(tenant):
    item = enqueue(tenant, group(tenant, allow=False))

    assert item.status == Status.SKIPPED
    assert item.last_error == "このグループへの自動投稿は許可されていません（allow_outbound_push が無効）"


def test_groups_default_to_no_pushes_and_no_triggers(tenant):
    from line.models import LineSource

    source = LineSource.objects.create(tenant=tenant, group_id="Cdefault")

    assert (source.allow_outbound_push, source.push_opt_in_triggers) == (False, [])
    assert enqueue(tenant, source).status == Status.SKIPPED


def test_it_skips_a_trigger_the_group_did_not_opt_in_to(tenant):
    item = enqueue(tenant, group(tenant, triggers=["task_approved"]), trigger="reminder")

    assert item.status == Status.SKIPPED
    assert item.last_error == "このグループは「リマインダー」（reminder）の自動投稿を許可していません"


def test_it_skips_an_unknown_group(tenant):
    item = enqueue(tenant, "Cunknown")

    assert item.status == Status.SKIPPED and "登録されていません" in item.last_error


def test_it_skips_a_group_the_bot_left(tenant):
    from django.utils import timezone

    item = enqueue(tenant, group(tenant, left_at=timezone.now()))

    assert item.status == Status.SKIPPED and "退出" in item.last_error


@pytest.mark.parametrize(
    ("trigger", "status"),
    [
        ("task_approved", Status.PENDING),
        ("reminder", Status.PENDING),
        ("morning_digest", Status.PENDING),
        ("escalation", Status.WAITING_APPROVAL),
        ("signal_approved", Status.WAITING_APPROVAL),
    ],
)
def test_risky_triggers_wait_for_approval_by_default(tenant, trigger, status):
    assert enqueue(tenant, group(tenant), trigger=trigger).status == status


def test_a_tenant_policy_changes_what_needs_approval(tenant):
    LineTriggerPolicy.objects.create(tenant=tenant, trigger_type="escalation", requires_approval=False)
    LineTriggerPolicy.objects.create(tenant=tenant, trigger_type="reminder", requires_approval=True)

    assert enqueue(tenant, group(tenant), key="a", trigger="escalation").status == Status.PENDING
    assert enqueue(tenant, group(tenant), key="b", trigger="reminder").status == Status.WAITING_APPROVAL


def test_it_rejects_an_invalid_payload_with_every_reason(tenant):
    with pytest.raises(PushInvalid) as caught:
        push_enqueue(
            tenant=tenant,
            ext_group_id="Cabc",
            trigger_type="gossip",
            payload=[{"type": "text", "text": ""}] * 6,
            dedupe_key="k",
        )

    problems = caught.value.problems
    assert problems[0].startswith("trigger_type「gossip」は使えません")
    assert "メッセージが 6 件あります（LINE は 1 回の送信で 1〜5 件）。" in problems


# -- approval in the admin --------------------------------------------------------------------


@pytest.fixture
def manager(client):
    user = User.objects.create_superuser("yamada", "yamada@example.jp", "pw")
    client.force_login(user)
    return user


def _act(client, action: str, item: LinePushItem):
    url = reverse("admin:linepush_linepushitem_changelist")
    return client.post(url, {"action": action, "_selected_action": [item.pk]}, follow=True)


def test_a_manager_approves_a_waiting_item_and_it_is_sent(client, manager, line, tenant):
    item = enqueue(tenant, group(tenant), trigger="escalation")
    assert step() is Pass.IDLE

    response = _act(client, "approve", item)

    assert "1 件を承認しました" in response.content.decode()
    item = reload(item)
    assert (item.status, item.approved_by, item.approved_at is not None) == (Status.PENDING, manager, True)
    step()
    assert reload(item).status == Status.SENT and len(line.sent(PUSH)) == 1


def test_a_rejected_item_ends_skipped_and_is_never_sent(client, manager, line, tenant):
    item = enqueue(tenant, group(tenant), trigger="signal_approved")

    _act(client, "reject", item)
    step()

    item = reload(item)
    assert (item.status, item.rejected_by, item.last_error) == (
        Status.SKIPPED,
        manager,
        "yamada が却下しました",
    )
    assert _act(client, "approve", item).status_code == 200 and reload(item).status == Status.SKIPPED
    assert line.sent() == []


def test_the_admin_lists_and_shows_items(client, manager, tenant):
    item = enqueue(tenant, group(tenant))

    assert client.get(reverse("admin:linepush_linepushitem_changelist")).status_code == 200
    assert client.get(reverse("admin:linepush_linepushitem_change", args=[item.pk])).status_code == 200
    for app, name in (
        ("line", "linesource"),
        ("line", "linepushsettings"),
        ("line", "lineplan"),
        ("line", "linemonthlyusage"),
        ("linepush", "linetriggerpolicy"),
        ("linepush", "lineapitoken"),
        ("line", "linewebhookevent"),
        ("line", "linesurveyrule"),
        ("line", "linecontact"),
    ):
        assert client.get(reverse(f"admin:{app}_{name}_changelist")).status_code == 200, name

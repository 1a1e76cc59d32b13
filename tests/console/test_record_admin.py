"""Audit and attempt rows, and schedules, are not deleted in the admin by managers."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from backlog_bridge.models import BacklogEvent, CommandRun
from console.models import DeliveryOutcome
from deliveries.models import DeliverySchedule
from line.models import LineMonthlyUsage, LineWebhookEvent
from linepush.models import LinePushAttempt, LinePushItem
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db


def delete_url(obj) -> str:
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[obj.pk])


def records(tenant) -> list:
    """One row of each kind the admin lists and that says what happened."""
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-1")
    return [
        BacklogEvent.objects.create(tenant=tenant, activity_id=1, type=1, payload={}),
        CommandRun.objects.create(tenant=tenant, issue_key="ACME-1", comment_id=1, verb="send"),
        DeliveryOutcome.objects.create(tenant=tenant, task=task, kind=DeliveryOutcome.Kind.SENT),
        LineWebhookEvent.objects.create(tenant=tenant, webhook_event_id="ev-1", type="message", payload={}),
        LineMonthlyUsage.objects.create(tenant=tenant, month="2026-12", messages=10),
    ]


@pytest.fixture
def schedule(tenant):
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-9")
    return DeliverySchedule.objects.create(
        tenant=tenant,
        task=task,
        name=DeliverySchedule.name_for(tenant, task.issue_key),
        due_at=timezone.now(),
        reason=DeliverySchedule.Reason.APPROVAL,
    )


def test_it_refuses_a_managers_delete_of_a_schedule(as_manager, schedule):
    assert as_manager.get(delete_url(schedule)).status_code == 403
    assert as_manager.post(delete_url(schedule), {"post": "yes"}).status_code == 403
    assert DeliverySchedule.objects.filter(pk=schedule.pk).exists()


def test_it_refuses_a_managers_delete_of_a_push_item_and_its_attempts(as_manager, tenant):
    pushed = LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="Cgroup",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "明日締切"}],
        dedupe_key="reminder-1",
        scheduled_at=timezone.now(),
        status=LinePushItem.Status.SENT,
    )
    LinePushAttempt.objects.create(item=pushed, retry_key="k", status_code=200, outcome="sent")

    assert as_manager.post(delete_url(pushed), {"post": "yes"}).status_code == 403
    assert LinePushAttempt.objects.filter(item=pushed).exists()


def test_it_refuses_a_managers_delete_of_every_record(as_manager, tenant):
    rows = records(tenant)

    answers = {
        type(row).__name__: as_manager.post(delete_url(row), {"post": "yes"}).status_code for row in rows
    }

    assert set(answers.values()) == {403}, answers
    assert all(type(row).objects.filter(pk=row.pk).exists() for row in rows)


def test_it_offers_a_manager_no_bulk_delete_of_records(as_manager, tenant):
    records(tenant)

    page = as_manager.get(reverse("admin:backlog_bridge_backlogevent_changelist")).content.decode()

    assert "delete_selected" not in page


def test_it_refuses_a_managers_edit_of_the_months_usage(as_manager, tenant):
    usage = LineMonthlyUsage.objects.create(tenant=tenant, month="2026-12", messages=900)
    url = reverse("admin:line_linemonthlyusage_change", args=[usage.pk])

    response = as_manager.post(url, {"tenant": str(tenant.pk), "month": "2026-12", "messages": "0"})

    assert response.status_code == 403
    usage.refresh_from_db()
    assert usage.messages == 900


def test_it_lets_a_superuser_delete_records(client, superuser, tenant, schedule):
    client.force_login(superuser)
    rows = [*records(tenant), schedule]

    answers = {type(row).__name__: client.post(delete_url(row), {"post": "yes"}).status_code for row in rows}

    assert set(answers.values()) == {302}, answers
    assert not any(type(row).objects.filter(pk=row.pk).exists() for row in rows)


@pytest.mark.parametrize("model", [BacklogEvent, LineWebhookEvent])
def test_the_event_list_shows_why_an_event_was_rejected(admin_client, tenant, model):
    identity = (
        {"activity_id": 1, "type": 2}
        if model is BacklogEvent
        else {"webhook_event_id": "e", "type": "follow"}
    )
    model.objects.create(
        tenant=tenant,
        payload={},
        outcome="rejected",
        detail="invalid payload: `source` must be an object",
        **identity,
    )
    model.objects.create(
        tenant=tenant,
        payload={},
        outcome="done",
        detail="done detail, not a reason",
        **identity | _other(model),
    )

    page = admin_client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))

    text = page.content.decode()
    assert page.status_code == 200
    assert "受付不可の理由" in text and "受付不可の内容: `source` must be an object" in text
    assert "done detail, not a reason" not in text


def _other(model) -> dict:
    return {"activity_id": 2} if model is BacklogEvent else {"webhook_event_id": "f"}

"""配信予約 and メッセージテンプレート as a manager reads them: the task, when and why, and the
template as LINE bubbles; a schedule's name and lease and a template's JSON for superusers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from deliveries.models import DeliverySchedule, MessageTemplate
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def schedule(tenant):
    task = ContentTaskFactory(tenant=tenant, issue_key="ACME-9", summary="冬季営業時間のお知らせ")
    return DeliverySchedule.objects.create(
        tenant=tenant,
        task=task,
        name="automedia-deliver-acme-ACME-9",
        due_at=timezone.now() + timedelta(days=1),
        reason="approval",
        lease_until=timezone.now(),
    )


def test_a_manager_reads_a_schedule_by_its_task_not_its_machinery(client, as_manager, superuser, schedule):
    url = reverse("admin:deliveries_deliveryschedule_change", args=[schedule.pk])
    listed = as_manager.get(reverse("admin:deliveries_deliveryschedule_changelist")).content.decode()
    page = as_manager.get(url).content.decode()
    client.force_login(superuser)
    machinery = client.get(url).content.decode()

    for html in (listed, page):
        assert "ACME-9 冬季営業時間のお知らせ" in html
        assert "automedia-deliver-acme-ACME-9" not in html and "リース期限" not in html
    assert "Task:" not in page and "タスク" in page
    assert "automedia-deliver-acme-ACME-9" in machinery and "リース期限" in machinery


def test_a_manager_reads_a_template_as_line_bubbles_not_json(client, as_manager, superuser, tenant):
    template = MessageTemplate.objects.create(
        name="announce_open", rev="r1", messages=[{"type": "text", "text": "{{ date }} の営業時間"}]
    )
    url = reverse("admin:deliveries_messagetemplate_change", args=[template.pk])
    listed = as_manager.get(reverse("admin:deliveries_messagetemplate_changelist")).content.decode()
    page = as_manager.get(url).content.decode()
    client.force_login(superuser)

    assert "全テナント共通" in listed and ">None<" not in listed and ">line<" not in listed
    assert '<div class="am-bubble" data-kind="text">' in page and "{{ date }} の営業時間" in page
    assert "&quot;type&quot;" not in page
    assert "&quot;type&quot;" in client.get(url).content.decode()

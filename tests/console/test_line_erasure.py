"""The admin's erasure of a LINE user's data (console/admin/linepush.py): superusers only,
one user at a time, after a confirmation page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from line.models import LineContact, LineErasure, LineWebhookEvent

pytestmark = pytest.mark.django_db

USER = "U" + "c" * 32
CHANGELIST = "admin:line_linecontact_changelist"


@pytest.fixture
def contact(tenant):
    LineWebhookEvent.objects.create(
        tenant=tenant,
        webhook_event_id="e1",
        type="follow",
        payload={"source": {"userId": USER}},
        outcome="done",
    )
    return LineContact.objects.create(tenant=tenant, user_id=USER, display_name="山田花子")


def erase(client, *contacts, confirmed: bool):
    form = {"action": "erase_personal_data", "_selected_action": [c.pk for c in contacts]}
    if confirmed:
        form["confirmed"] = "yes"
    return client.post(reverse(CHANGELIST), form, follow=True)


def test_a_superuser_confirms_then_erases_and_the_erasure_is_recorded(client, superuser, contact):
    client.force_login(superuser)

    page = erase(client, contact, confirmed=False)
    assert page.status_code == 200
    assert USER in page.content.decode() and LineContact.objects.filter(pk=contact.pk).exists()

    done = erase(client, contact, confirmed=True)

    assert "データを消去しました" in done.content.decode()
    assert not LineContact.objects.filter(pk=contact.pk).exists()
    assert LineWebhookEvent.objects.get().payload == {"source": {"userId": ""}}
    assert LineErasure.objects.get().erased_by == superuser


def test_a_manager_neither_sees_nor_runs_the_erasure(client, manager, contact):
    client.force_login(manager)

    page = client.get(reverse(CHANGELIST)).content.decode()
    assert "erase_personal_data" not in page

    refused = erase(client, contact, confirmed=True)

    assert LineContact.objects.filter(pk=contact.pk).exists()
    assert not LineErasure.objects.exists()
    assert "データを消去しました" not in refused.content.decode()


def test_it_erases_one_user_at_a_time(client, superuser, contact, tenant):
    second = LineContact.objects.create(tenant=tenant, user_id="U" + "d" * 32)
    client.force_login(superuser)

    page = erase(client, contact, second, confirmed=True)

    assert "1 人だけ選んでください" in page.content.decode()
    assert LineContact.objects.count() == 2


def test_the_erasures_list_shows_who_and_when(client, superuser, contact):
    client.force_login(superuser)
    erase(client, contact, confirmed=True)

    page = client.get(reverse("admin:line_lineerasure_changelist")).content.decode()

    assert "root" in page and USER not in page and "山田花子" not in page

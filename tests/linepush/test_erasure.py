"""linepush/erasure.py: a LINE user's data erased on request removes the contact and the
user's id from every stored event and LINE delivery attempt, and records who and when."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType

from deliveries.models import DeliveryAttempt
from linepush.erasure import line_user_erase
from linepush.models import LineAnswer, LineContact, LineErasure, LineWebhookEvent
from tests.helpers.factories import ContentTaskFactory, TenantFactory
from tests.helpers.linepush import USER, shop

pytestmark = pytest.mark.django_db

OTHER = "U" + "b" * 32


@pytest.fixture
def tenant(db):
    return shop()


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", "root@example.jp", "pw")


def event(tenant, n: int, payload: dict, outcome: str = "done") -> LineWebhookEvent:
    return LineWebhookEvent.objects.create(
        tenant=tenant, webhook_event_id=f"e{n}", type=payload["type"], payload=payload, outcome=outcome
    )


def traces(tenant) -> list:
    message = {
        "id": "1",
        "type": "text",
        "text": "電話番号は…",
        "mention": {"mentionees": [{"userId": OTHER}]},
    }
    return [
        event(tenant, 1, {"type": "follow", "source": {"type": "user", "userId": USER}}),
        event(
            tenant,
            2,
            {"type": "message", "source": {"type": "user", "userId": USER}, "message": message},
            "pending",
        ),
        event(
            tenant,
            3,
            {
                "type": "memberJoined",
                "source": {"type": "group", "groupId": "C1"},
                "joined": {"members": [{"type": "user", "userId": USER}, {"type": "user", "userId": OTHER}]},
            },
        ),
    ]


def test_it_removes_the_users_id_from_every_stored_event_and_keeps_the_others(tenant, admin_user):
    follow, message, joined = traces(tenant)
    untouched = event(tenant, 4, {"type": "follow", "source": {"type": "user", "userId": OTHER}})
    contact = LineContact.objects.create(tenant=tenant, user_id=USER, display_name="山田花子", tags=["vip"])
    LineAnswer.objects.create(tenant=tenant, message_id="1", user_id=USER, timestamp=1, text="参加します")
    kept = LineAnswer.objects.create(tenant=tenant, message_id="2", user_id=OTHER, timestamp=1, text="x")

    erasure = line_user_erase(contact=contact, by=admin_user)

    for row in (follow, message, joined, untouched):
        row.refresh_from_db()
    assert all(USER not in str(e.payload) for e in LineWebhookEvent.objects.all())
    assert follow.payload["source"] == {"type": "user", "userId": ""}
    assert message.payload["message"] == {"id": "1", "type": "text", "blanked": True}  # their words too
    assert message.outcome == "pending"  # the event itself stays: only its content goes
    assert joined.payload["joined"]["members"] == [
        {"type": "user", "userId": ""},
        {"type": "user", "userId": OTHER},
    ]
    assert untouched.payload["source"]["userId"] == OTHER
    assert not LineContact.objects.filter(user_id=USER).exists()
    assert list(LineAnswer.objects.values_list("pk", flat=True)) == [kept.pk]
    assert erasure.events == 3


def test_it_removes_the_user_from_the_recipients_of_line_deliveries(tenant, admin_user):
    task = ContentTaskFactory(tenant=tenant)
    attempt = DeliveryAttempt.objects.create(
        tenant=tenant,
        task=task,
        approval_seq=1,
        channel="line",
        endpoint="/v2/bot/message/multicast",
        outcome="sent",
        request_summary={"kind": "multicast", "recipients": 2, "first": USER, "to": [USER, OTHER]},
    )
    contact = LineContact.objects.create(tenant=tenant, user_id=USER)

    erasure = line_user_erase(contact=contact, by=admin_user)

    attempt.refresh_from_db()
    assert attempt.request_summary == {"kind": "multicast", "recipients": 2, "first": "", "to": [OTHER]}
    assert erasure.attempts == 1


def test_it_records_who_and_when_without_the_erased_data(tenant, admin_user):
    contact = LineContact.objects.create(tenant=tenant, user_id=USER, display_name="山田花子")
    LogEntry.objects.create(
        user_id=admin_user.pk,
        content_type=ContentType.objects.get_for_model(LineContact),
        object_id=str(contact.pk),
        object_repr="山田花子",
        action_flag=CHANGE,
        change_message="タグを変更",
    )

    erasure = line_user_erase(contact=contact, by=admin_user)

    row = LineErasure.objects.get()
    assert (row.pk, row.tenant_id, row.erased_by, row.erased_by_name) == (
        erasure.pk,
        tenant.pk,
        admin_user,
        "root",
    )
    assert row.erased_at is not None
    stored = str([getattr(row, f.attname) for f in LineErasure._meta.fields])
    assert USER not in stored and "山田花子" not in stored
    assert [(e.object_repr, e.change_message) for e in LogEntry.objects.all()] == [(f"#{contact.pk}", "")]


def test_an_erasure_run_again_finds_nothing_left(tenant, admin_user):
    traces(tenant)
    line_user_erase(contact=LineContact.objects.create(tenant=tenant, user_id=USER), by=admin_user)

    again = line_user_erase(contact=LineContact.objects.create(tenant=tenant, user_id=USER), by=admin_user)

    assert (again.events, again.attempts) == (0, 0)


def test_it_leaves_another_tenants_events_alone(tenant, admin_user):
    elsewhere = event(
        TenantFactory(slug="other"), 9, {"type": "follow", "source": {"type": "user", "userId": USER}}
    )

    line_user_erase(contact=LineContact.objects.create(tenant=tenant, user_id=USER), by=admin_user)

    elsewhere.refresh_from_db()
    assert elsewhere.payload["source"]["userId"] == USER

"""line/erasure.py: a LINE user's data erased on request removes the contact and the
user's id from every stored event and LINE delivery attempt, and records who and when."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from core.retention import records_prune
from deliveries.channels.models import ChannelPost
from deliveries.models import DeliveryAttempt
from line.erasure import line_user_erase
from line.models import LineAnswer, LineContact, LineErasure, LineWebhookEvent
from tests.helpers.factories import ContentTaskFactory, TenantFactory
from tests.helpers.linepush import USER, deliver, fixture, shop

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


def test_it_scrubs_the_id_from_stored_texts_and_a_narrowcasts_user_list(tenant, admin_user):
    old = event(tenant, 5, {"type": "unfollow", "source": {"type": "user", "userId": OTHER}})
    LineWebhookEvent.objects.filter(pk=old.pk).update(detail=f"blocked {USER}; new contact {USER}")
    task = ContentTaskFactory(tenant=tenant)
    post = ChannelPost.objects.create(
        tenant=tenant,
        task=task,
        approval_seq=1,
        channel="line",
        details={"users": [OTHER, USER, "U" + "c" * 32], "uploaded": 2},
    )
    contact = LineContact.objects.create(tenant=tenant, user_id=USER)

    line_user_erase(contact=contact, by=admin_user)

    old.refresh_from_db()
    post.refresh_from_db()
    assert old.detail == "blocked [消去済み]; new contact [消去済み]"
    assert post.details == {"users": [OTHER, "U" + "c" * 32], "uploaded": 1}  # the next id still uploads


def test_the_handlers_details_name_no_user(client, tenant, line):
    for name in ("follow", "unfollow"):
        assert deliver(client, fixture(name, source={"type": "user", "userId": USER})).status_code == 200

    details = list(LineWebhookEvent.objects.values_list("detail", flat=True))
    assert len(details) == 2 and all(details) and not any(USER in d for d in details)


def test_the_retention_policy_drops_an_old_narrowcasts_user_list(tenant, settings):
    task = ContentTaskFactory(tenant=tenant)
    post = ChannelPost.objects.create(
        tenant=tenant, task=task, approval_seq=1, channel="line", details={"users": [USER, OTHER]}
    )
    recent = ChannelPost.objects.create(
        tenant=tenant,
        task=ContentTaskFactory(tenant=tenant),
        approval_seq=1,
        channel="line",
        details={"users": [USER]},
    )
    ChannelPost.objects.filter(pk=post.pk).update(updated_at=timezone.now() - timedelta(days=31))

    records_prune(now=timezone.now())

    post.refresh_from_db()
    recent.refresh_from_db()
    assert post.details == {"users": [], "audience_size": 2, "users_dropped": True}
    assert recent.details == {"users": [USER]}  # a narrowcast may still be under way


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

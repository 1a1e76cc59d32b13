"""The Backlog webhook endpoint: every bad-input answer, dedupe, and Backlog's payload shapes."""

from __future__ import annotations

import json
from unittest import mock

import pytest
import respx
from django.db import connection
from django.db.models import ExpressionWrapper, F, TextField
from django.test.utils import CaptureQueriesContext

from backlog_bridge.events import BACKLOG_EVENTS, events_drain
from backlog_bridge.models import BacklogEvent
from core.intake import EventIntake
from core.models import Tenant
from deliveries.models import DeliverySchedule
from tests.helpers.backlog import comment_in_backlog, load_fixture, post, webhook_url
from tests.helpers.factories import TenantFactory

BODY = "## 配信メタ\n- チャネル: LINE\n- 投稿日時: 2030-01-10 10:00\n- 対象タグ: tag:active\n- テンプレ: announce\n"


@pytest.fixture
def approved_issues(fake_backlog):
    for summary in ("年末告知", "新年告知"):
        fake_backlog.create_issue("ACME", summary=summary, description=BODY, status="automedia承認")
    fake_backlog.outbox.clear()


def test_it_answers_404_for_an_unknown_tenant(client, db):
    assert (
        post(client, "/hooks/backlog/nobody/abc", load_fixture("backlog/issue_updated.json")).status_code
        == 404
    )


def test_it_answers_404_for_a_wrong_token(client, tenant):
    response = post(
        client, f"/hooks/backlog/{tenant.slug}/wrong-token", load_fixture("backlog/issue_updated.json")
    )

    assert response.status_code == 404
    assert not BacklogEvent.objects.exists()


def test_it_answers_404_for_another_tenants_token(client, tenant):
    other = TenantFactory(slug="other")
    response = post(
        client,
        f"/hooks/backlog/{tenant.slug}/{other.webhook_token}",
        load_fixture("backlog/issue_updated.json"),
    )

    assert response.status_code == 404


def test_it_answers_400_for_a_body_that_is_not_json(client, tenant):
    response = post(client, webhook_url(tenant), "{not json")

    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]


@pytest.mark.parametrize("payload", [[1, 2], '"text"', 42])
def test_it_answers_400_for_json_that_is_not_an_object(client, tenant, payload):
    response = post(
        client, webhook_url(tenant), json.dumps(payload) if not isinstance(payload, str) else payload
    )

    assert response.status_code == 400
    assert "JSON object" in response.json()["error"]


def test_it_answers_400_for_an_activity_without_id(client, tenant):
    payload = load_fixture("backlog/issue_updated.json")
    del payload["id"]

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 400
    assert "id" in response.json()["error"]


def test_it_answers_400_for_another_project(client, tenant):
    payload = load_fixture("backlog/issue_updated.json")
    payload["project"]["projectKey"] = "OTHER"

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 400
    assert "OTHER" in response.json()["error"]
    assert not BacklogEvent.objects.exists()


def test_it_answers_413_for_a_body_over_one_megabyte(client, tenant):
    payload = load_fixture("backlog/issue_updated.json")
    payload["content"]["description"] = "あ" * 400_000  # 1.2 MB in UTF-8

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 413
    assert not BacklogEvent.objects.exists()


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "１２"])
def test_it_answers_400_for_a_content_length_that_is_no_number(client, tenant, length):
    response = post(
        client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"), CONTENT_LENGTH=length
    )

    assert response.status_code == 400
    assert response.json() == {"error": "Content-Length is not a number of bytes"}
    assert not BacklogEvent.objects.exists()


def test_it_stores_and_processes_an_accepted_event(
    client, tenant, approved_issues, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.status_code == 200
    assert response.json() == {"result": "accepted"}
    event = BacklogEvent.objects.get()
    assert (event.activity_id, event.issue_key, event.outcome) == (12, "ACME-1", "done")
    assert event.payload["content"]["changes"][0]["new_value"] == "5"
    assert DeliverySchedule.objects.filter(task__issue_key="ACME-1").exists()


@pytest.fixture
def enqueued(monkeypatch):
    """The tasks webhook_accept hands to django-q2 (recorded, not run)."""
    calls = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: calls.append(args))
    return calls


def test_it_stores_the_event_pending_and_enqueues_a_drain(client, tenant, enqueued):
    response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.json() == {"result": "accepted"}
    assert enqueued == [("backlog_bridge.tasks.process_events",)]
    assert BacklogEvent.objects.get().outcome == "pending"


def test_it_answers_200_and_does_nothing_for_a_duplicate(client, tenant, enqueued):
    payload = load_fixture("backlog/issue_updated.json")
    post(client, webhook_url(tenant), payload)

    response = post(client, webhook_url(tenant), payload)

    assert response.json() == {"result": "duplicate"}
    assert len(enqueued) == 1
    assert BacklogEvent.objects.count() == 1


def test_it_answers_200_and_does_nothing_for_an_ignored_type(client, tenant, enqueued):
    response = post(client, webhook_url(tenant), load_fixture("backlog/wiki_created.json"))

    assert response.json() == {"result": "ignored"}
    assert enqueued == []
    assert BacklogEvent.objects.get().outcome == "ignored"


@pytest.mark.parametrize(
    ("fixture", "issue_key", "detail"),
    [
        ("issue_created.json", "ACME-1", "scheduled at"),
        ("issue_updated.json", "ACME-1", "scheduled at"),
        ("issue_commented.json", "ACME-1", "comment stored"),
        ("issue_multi_updated.json", "", "ACME-2: scheduled at"),
    ],
)
def test_it_routes_each_documented_payload_shape(
    client,
    tenant,
    fake_backlog,
    approved_issues,
    django_capture_on_commit_callbacks,
    fixture,
    issue_key,
    detail,
):
    payload = load_fixture(f"backlog/{fixture}")
    if payload["type"] == 3:
        comment_in_backlog(fake_backlog, "ACME-1", payload)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 200
    event = BacklogEvent.objects.get()
    assert (event.issue_key, event.outcome) == (issue_key, "done")
    assert detail in event.detail


def test_it_drops_the_schedule_of_a_deleted_issue(
    client, tenant, fake_backlog, approved_issues, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))
        fake_backlog.delete_issue("ACME-1")
        fake_backlog.outbox.clear()
        post(client, webhook_url(tenant), load_fixture("backlog/issue_deleted.json"))

    assert not DeliverySchedule.objects.exists()
    assert BacklogEvent.objects.get(type=4).detail == "deleted; schedule removed"


def test_a_deletion_webhook_for_an_issue_backlog_still_has_keeps_its_schedule(
    client, tenant, approved_issues, django_capture_on_commit_callbacks
):
    # The body is unsigned: the deletion is believed once Backlog no longer has the issue.
    with django_capture_on_commit_callbacks(execute=True):
        post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))
        post(client, webhook_url(tenant), load_fixture("backlog/issue_deleted.json"))

    assert DeliverySchedule.objects.filter(task__issue_key="ACME-1").exists()
    assert BacklogEvent.objects.get(type=4).detail == "no change"


def test_it_enqueues_after_commit_when_the_broker_is_redis(
    client, tenant, enqueued, settings, django_capture_on_commit_callbacks
):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert enqueued == [] and len(callbacks) == 1  # nothing reaches Redis before the event commits
    callbacks[0]()
    assert len(enqueued) == 1


def test_it_sees_a_rotated_webhook_token_at_once_in_this_process(client, tenant, enqueued):
    old = webhook_url(tenant)
    post(client, old, load_fixture("backlog/issue_updated.json"))  # caches the tenant
    tenant.webhook_token = "rotated-token"
    tenant.save()

    assert post(client, old, load_fixture("backlog/issue_created.json")).status_code == 404
    assert post(client, webhook_url(tenant), load_fixture("backlog/issue_created.json")).status_code == 200


def _bad(fixture: str, change) -> dict:
    payload = load_fixture(f"backlog/{fixture}")
    change(payload)
    return payload


BAD_IDENTIFIERS = {
    "key_id path traversal": ("issue_commented.json", lambda p: p["content"].update(key_id="1/../OTHER-1")),
    "key_id as text": ("issue_updated.json", lambda p: p["content"].update(key_id="1")),
    "key_id zero": ("issue_updated.json", lambda p: p["content"].update(key_id=0)),
    "key_id negative": ("issue_created.json", lambda p: p["content"].update(key_id=-3)),
    "key_id boolean": ("issue_deleted.json", lambda p: p["content"].update(key_id=True)),
    "key_id too long": ("issue_updated.json", lambda p: p["content"].update(key_id=10**70)),
    "key_id missing": ("issue_updated.json", lambda p: p["content"].pop("key_id")),
    "issue id as text": ("issue_updated.json", lambda p: p["content"].update(id="../10001")),
    "comment id traversal": (
        "issue_commented.json",
        lambda p: p["content"]["comment"].update(id="201/../../../users/myself"),
    ),
    "comment id missing": ("issue_commented.json", lambda p: p["content"].pop("comment")),
    "bulk link key_id": ("issue_multi_updated.json", lambda p: p["content"]["link"][0].update(key_id="2?x=")),
    "bulk link not a list": ("issue_multi_updated.json", lambda p: p["content"].update(link="ACME-2")),
    "activity id too large": ("issue_updated.json", lambda p: p.update(id=2**63)),
    "type out of range": ("issue_updated.json", lambda p: p.update(type=70000)),
}


@pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx
@pytest.mark.parametrize("case", list(BAD_IDENTIFIERS))
def test_it_answers_400_for_an_identifier_out_of_format_and_calls_no_one(
    client, tenant, fake_backlog, django_capture_on_commit_callbacks, case
):
    payload = _bad(*BAD_IDENTIFIERS[case])

    with respx.mock(assert_all_called=False) as backlog, django_capture_on_commit_callbacks(execute=True):
        anything = backlog.route().respond(200, json={})
        response = post(client, webhook_url(tenant), payload)
        events_drain()

    assert response.status_code == 400
    assert response.json()["error"]
    assert not anything.called and not fake_backlog.requests
    assert not BacklogEvent.objects.exists()


def test_it_says_which_identifier_is_wrong(client, tenant):
    payload = _bad("issue_commented.json", lambda p: p["content"].update(key_id="1/../OTHER-1"))

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 400
    assert response.json() == {"error": "`content.key_id` must be a positive integer, not '1/../OTHER-1'"}


def test_it_refuses_a_token_rotated_in_another_process_at_once(client, tenant, enqueued):
    old = webhook_url(tenant)
    post(client, old, load_fixture("backlog/issue_updated.json"))  # this process knows the tenant now
    # Another process (the admin, add_tenant) rotates it: no signal reaches this one.
    Tenant.objects.filter(pk=tenant.pk).update(webhook_token="rotated-token")

    assert post(client, old, load_fixture("backlog/issue_created.json")).status_code == 404
    assert post(client, old, load_fixture("backlog/issue_created.json")).status_code == 404
    assert not BacklogEvent.objects.filter(activity_id=11).exists()
    response = post(client, "/hooks/backlog/acme/rotated-token", load_fixture("backlog/issue_created.json"))
    assert response.json() == {"result": "accepted"}


def test_it_refuses_a_tenant_deactivated_in_another_process_at_once(client, tenant, enqueued):
    post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))
    Tenant.objects.filter(pk=tenant.pk).update(is_active=False)

    assert post(client, webhook_url(tenant), load_fixture("backlog/issue_created.json")).status_code == 404
    assert not BacklogEvent.objects.filter(activity_id=11).exists()


def test_it_reads_a_tenant_edited_in_another_process_when_its_project_key_no_longer_fits(
    client, tenant, enqueued
):
    post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))
    # Another process edits the tenant; a save() writes the same token as a new ciphertext.
    Tenant.objects.filter(pk=tenant.pk).update(backlog_project_key="NEW", webhook_token=tenant.webhook_token)
    payload = load_fixture("backlog/issue_created.json")
    payload["project"]["projectKey"] = "NEW"

    assert post(client, webhook_url(tenant), payload).json() == {"result": "accepted"}


def test_a_known_tenants_webhook_is_one_statement(client, tenant, enqueued):
    post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))  # the tenant is known now

    with CaptureQueriesContext(connection) as queries:
        response = post(client, webhook_url(tenant), load_fixture("backlog/issue_created.json"))

    assert response.json() == {"result": "accepted"}
    # The savepoint is the test's transaction's: a webhook's INSERT runs in autocommit.
    [insert] = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert insert.startswith(f'INSERT INTO "{BacklogEvent._meta.db_table}"')
    assert "webhook_token" in insert and "ON CONFLICT DO NOTHING" in insert  # the token, the duplicate


def test_it_stores_through_the_shared_intake(client, tenant, enqueued):
    store = mock.patch.object(EventIntake, "store", autospec=True, side_effect=EventIntake.store)

    with store as stored:
        response = post(client, webhook_url(tenant), load_fixture("backlog/issue_updated.json"))

    assert response.json() == {"result": "accepted"}
    [call] = stored.call_args_list
    assert call.args[0] is BACKLOG_EVENTS and call.args[1].activity_id == 12
    stored = ExpressionWrapper(F("webhook_token"), output_field=TextField())  # the ciphertext
    token = Tenant.objects.filter(pk=tenant.pk).values_list(stored, flat=True).get()
    assert call.kwargs["held"].values == {"id": tenant.pk, "is_active": True, "webhook_token": token}
    assert enqueued == [("backlog_bridge.tasks.process_events",)]

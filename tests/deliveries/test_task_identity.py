"""A task is a Backlog issue (its numeric id, under the key Backlog answers with), never a
string built from a webhook: no payload can make one issue two tasks, nor post it twice."""

from __future__ import annotations

import pytest
import respx

from deliveries.models import ContentTask, DeliverySchedule
from tests.helpers.backlog import load_fixture, post, texts, webhook_url
from tests.helpers.deliveries import MULTICAST, fire

pytestmark = pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx

RESERVED = "配信を予約しました"


def update_of(key_id: object, activity_id: int) -> dict:
    """Backlog's status-change webhook (to automedia承認) naming the issue by `key_id`."""
    payload = load_fixture("backlog/issue_updated.json")
    payload["id"] = activity_id
    payload["content"]["key_id"] = key_id
    payload["createdUser"]["id"] = 1002  # another manager, so never automedia's own echo
    return payload


def send(client, tenant, payload, capture):
    with capture(execute=True):
        return post(client, webhook_url(tenant), payload)


@pytest.mark.parametrize("crafted", ["1/../1", "1/../77", "01", "1.0", 1.0, True, "ACME-1"])
def test_a_crafted_key_id_is_refused_and_the_issue_stays_one_task(
    client, tenant, approved, django_capture_on_commit_callbacks, crafted
):
    key = approved()

    response = send(client, tenant, update_of(crafted, 900), django_capture_on_commit_callbacks)

    assert response.status_code == 400 and "key_id" in response.json()["error"]
    assert list(ContentTask.objects.values_list("issue_key", flat=True)) == [key]


def test_an_issue_named_by_another_key_is_one_task_one_schedule_one_post(
    client, tenant, fake_backlog, approved, line, django_capture_on_commit_callbacks
):
    key = approved()
    issue = fake_backlog.issue(key)

    # Backlog answers ACME-77 with the issue ACME-1 (as an issue's old key answers after a
    # move): the reconcile acts on the issue Backlog names, not on the key it was asked for.
    with respx.mock(assert_all_called=False) as backlog:
        alias = backlog.get(url__regex=r"/api/v2/issues/ACME-77(\?|$)").respond(200, json=issue)
        backlog.route().pass_through()
        response = send(client, tenant, update_of(77, 901), django_capture_on_commit_callbacks)

    assert response.json() == {"result": "accepted"} and alias.call_count == 1
    assert list(ContentTask.objects.values_list("issue_key", "issue_id")) == [(key, issue["id"])]
    assert DeliverySchedule.objects.count() == 1
    assert len([t for t in texts(fake_backlog, key) if RESERVED in t]) == 1

    assert fire(key) == "delivered"
    assert len(line.sent(MULTICAST)) == 1


def test_an_issue_backlog_answers_from_another_project_gets_no_task(
    client, tenant, fake_backlog, approved, django_capture_on_commit_callbacks
):
    key = approved()
    moved = fake_backlog.issue(key) | {"issueKey": "OTHER-5"}

    with respx.mock(assert_all_called=False) as backlog:
        backlog.get(url__regex=r"/api/v2/issues/ACME-1(\?|$)").respond(200, json=moved)
        backlog.route().pass_through()
        send(client, tenant, update_of(1, 902), django_capture_on_commit_callbacks)

    # The issue is no longer this tenant's: its schedule goes, and no task is made for OTHER-5.
    assert list(ContentTask.objects.values_list("issue_key", flat=True)) == [key]
    assert not DeliverySchedule.objects.exists()

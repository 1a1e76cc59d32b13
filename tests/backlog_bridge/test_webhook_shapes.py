"""The Backlog receiver checks the shape of what it stores: a field of the wrong type is a 400
with the reason, never a 500 at the receiver nor an AttributeError in the worker."""

from __future__ import annotations

import pytest

from backlog_bridge.models import BacklogEvent
from tests.helpers.backlog import load_fixture, post, webhook_url

pytestmark = pytest.mark.usefixtures("no_enqueue")


@pytest.fixture
def no_enqueue(monkeypatch):
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: None)


def _set(payload: dict, path: str, value: object) -> dict:
    *parents, last = path.split(".")
    target = payload
    for name in parents:
        target = target[name]
    target[last] = value
    return payload


WRONG_SHAPES = {
    "type-true": ("type", True, "`type`"),
    "type-text": ("type", "2", "`type`"),
    "type-float": ("type", 2.0, "`type`"),
    "id-true": ("id", True, "`id`"),
    "project-text": ("project", "ACME", "project key"),
    "content-text": ("content", "ACME-1", "`content`"),
    "content-list": ("content", [1], "`content`"),
    "changes-text": ("content.changes", "status", "`content.changes`"),
    "changes-of-numbers": ("content.changes", [1, 2], "`content.changes`"),
    "change-without-field": ("content.changes", [{"field": 5}], "`content.changes`"),
    "created-user-text": ("createdUser", "manager", "`createdUser`"),
    "created-user-id-text": ("createdUser", {"id": "1001"}, "`createdUser`"),
    "key-id-too-big": ("content.key_id", 10**70, "key_id"),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES))
def test_it_answers_400_with_the_reason_for_a_field_of_the_wrong_shape(client, tenant, case):
    path, value, reason = WRONG_SHAPES[case]
    payload = _set(load_fixture("backlog/issue_updated.json"), path, value)

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 400
    assert reason in response.json()["error"]
    assert not BacklogEvent.objects.exists()


@pytest.mark.parametrize("content", ["a wiki page", 7, [1, 2], None])
def test_it_stores_a_type_it_does_not_handle_as_ignored_whatever_its_content(client, tenant, content):
    # A non-object content of an unhandled type once reached `content.get(...)`: a 500.
    payload = load_fixture("backlog/wiki_created.json") | {"content": content}

    response = post(client, webhook_url(tenant), payload)

    assert (response.status_code, response.json()) == (200, {"result": "ignored"})
    event = BacklogEvent.objects.get()
    assert (event.outcome, event.issue_key, event.payload["content"]) == ("ignored", "", content)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"id": 12, "type": 2, "x": "\xff\xfe"}', "not UTF-8"),
        ('{"id": 12, "type": 2}'.encode("utf-16"), "not UTF-8"),
        (b'{"id": 12, "type": 2', "not valid JSON"),
    ],
    ids=["invalid-utf8", "utf16", "truncated"],
)
def test_it_answers_400_with_the_reason_for_a_body_that_is_not_utf8_json(client, tenant, raw, reason):
    response = post(client, webhook_url(tenant), raw)

    assert response.status_code == 400
    assert reason in response.json()["error"]
    assert not BacklogEvent.objects.exists()


@pytest.mark.parametrize(
    ("content", "issue_key"),
    [
        ({"tx_id": 1, "link": [{"id": 5, "key_id": 5, "title": "告知"}], "changes": []}, ""),
        ({"id": 5, "key_id": 5, "summary": "告知", "changes": []}, "ACME-5"),
    ],
    ids=["link-list", "one-issue"],
)
def test_it_stores_a_bulk_date_update_for_handling(client, tenant, content, issue_key):
    payload = load_fixture("backlog/issue_updated.json") | {"type": 35, "content": content}

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 200
    event = BacklogEvent.objects.get()
    assert (event.type, event.outcome, event.issue_key) == (35, "pending", issue_key)


def test_it_answers_400_for_a_bulk_date_update_naming_an_issue_out_of_format(client, tenant):
    content = {"tx_id": 1, "link": [{"id": 5, "key_id": "5/../../x"}]}
    payload = load_fixture("backlog/issue_updated.json") | {"type": 35, "content": content}

    response = post(client, webhook_url(tenant), payload)

    assert response.status_code == 400
    assert "content.link[].key_id" in response.json()["error"]

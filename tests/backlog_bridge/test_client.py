"""The Backlog client, with respx: the exact requests it sends and each failure mode."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

import httpx
import pytest
import respx
from django.test import override_settings

from backlog_bridge.client import (
    BacklogClient,
    BacklogError,
    BacklogHostRefused,
    InvalidIdentifier,
)

pytestmark = pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx

BASE = "https://acme.backlog.jp"


@pytest.fixture
def backlog():
    return BacklogClient(base_url=BASE + "/", api_key="secret-key")


@pytest.fixture
def mock():
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def test_it_sends_the_api_key_as_the_documented_parameter_without_a_trailing_slash(backlog, mock):
    route = mock.get("/api/v2/issues/ACME-1").respond(json={"id": 1})

    assert backlog.get_issue("ACME-1") == {"id": 1}
    request = route.calls.last.request
    assert request.url.path == "/api/v2/issues/ACME-1"
    assert request.url.params["apiKey"] == "secret-key"
    assert "Backlog-API-Key" not in request.headers and "X-Api-Key" not in request.headers


def test_it_sends_the_api_key_as_the_parameter_on_a_form_write(backlog, mock):
    route = mock.post("/api/v2/issues/ACME-1/comments").respond(json={"id": 9})

    backlog.add_comment("ACME-1", "本文")
    request = route.calls.last.request
    assert request.url.params["apiKey"] == "secret-key"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert parse_qs(request.content.decode()) == {"content": ["本文"]}


@override_settings(BACKLOG_API_KEY_IN="header")
def test_it_sends_the_api_key_in_the_backlog_api_key_header_when_set_so(backlog, mock):
    route = mock.post("/api/v2/issues/ACME-1/comments").respond(json={"id": 9})

    backlog.add_comment("ACME-1", "本文")
    request = route.calls.last.request
    assert request.headers["Backlog-API-Key"] == "secret-key"
    assert "apiKey" not in request.url.params and "X-Api-Key" not in request.headers


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254",  # a cloud metadata address
        "https://evil.example.com",
        "http://acme.backlog.jp",  # the key would travel in the clear
        "https://acme.backlog.jp.evil.com",
        "https://acme.backlog.jp@evil.com",
        "https://evil.com/?x=.backlog.jp",
        "https://acme.backlog.jp:8443",
        "https://acme.backlog.jp/api/v2/../../x",
    ],
)
def test_it_sends_no_request_to_a_base_url_that_is_no_backlog_space(url):
    client = BacklogClient(base_url=url, api_key="secret-key")

    with respx.mock(assert_all_called=False) as router:
        anything = router.route().respond(json={"id": 1})
        with pytest.raises(BacklogHostRefused) as refused:
            client.get_issue("ACME-1")

    assert anything.call_count == 0
    assert not refused.value.retryable  # the URL or the setting must change first


def test_it_writes_status_field_and_comment_in_one_form_encoded_patch(backlog, mock):
    route = mock.patch("/api/v2/issues/ACME-1").respond(json={"id": 1})

    backlog.update_issue(
        "ACME-1",
        status_id=6,
        custom_fields={102: "2026-12-10T10:00:00+09:00"},
        comment="[automedia] 配信しました",
    )

    assert route.call_count == 1
    request = route.calls.last.request
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(request.content.decode()) == {
        "statusId": ["6"],
        "customField_102": ["2026-12-10T10:00:00+09:00"],
        "comment": ["[automedia] 配信しました"],
    }


def test_it_raises_one_error_type_with_status_and_backlog_code(backlog, mock):
    mock.get("/api/v2/issues/ACME-9").respond(
        404, json={"errors": [{"message": "No issue.", "code": 6, "moreInfo": ""}]}
    )

    with pytest.raises(BacklogError) as caught:
        backlog.get_issue("ACME-9")

    assert (caught.value.status, caught.value.code, caught.value.message) == (404, 6, "No issue.")
    assert caught.value.retryable is False


def test_it_does_not_retry_an_auth_error(backlog, mock):
    route = mock.get("/api/v2/issues/ACME-1").respond(
        401, json={"errors": [{"message": "Authentication failure.", "code": 11}]}
    )

    with pytest.raises(BacklogError) as caught:
        backlog.get_issue("ACME-1")

    assert route.call_count == 1
    assert caught.value.status == 401 and not caught.value.retryable


@pytest.mark.parametrize(
    "fault", [httpx.Response(503), httpx.ReadTimeout("slow")], ids=["server-error", "timeout"]
)
def test_it_raises_a_retryable_error_at_once_for_its_caller_to_reschedule(backlog, mock, monkeypatch, fault):
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("must not sleep"))
    route = mock.get("/api/v2/issues/ACME-1").mock(side_effect=[fault, httpx.Response(200, json={"id": 1})])

    with pytest.raises(BacklogError) as caught:
        backlog.get_issue("ACME-1")

    assert route.call_count == 1
    assert caught.value.retryable and caught.value.status in (0, 503)


@pytest.mark.parametrize("seconds", [2, 600])
def test_it_raises_a_429_with_the_wait_until_the_reset_and_never_sleeps(backlog, mock, monkeypatch, seconds):
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("must not sleep"))
    reset = str(int(time.time()) + seconds)
    route = mock.get("/api/v2/issues/ACME-1").respond(
        429, headers={"X-RateLimit-Reset": reset}, json={"errors": [{"message": "Too many", "code": 13}]}
    )

    with pytest.raises(BacklogError) as caught:
        backlog.get_issue("ACME-1")

    assert route.call_count == 1
    assert caught.value.status == 429 and caught.value.retryable
    assert seconds - 2 < caught.value.retry_after <= seconds


def test_it_reads_no_wait_from_the_rate_limit_headers_of_a_server_error(backlog, mock):
    # Backlog sends X-RateLimit-Reset on every answer; on a 503 it says nothing about the outage.
    reset = str(int(time.time()) + 60)
    mock.get("/api/v2/issues/ACME-1").respond(503, headers={"X-RateLimit-Reset": reset})

    with pytest.raises(BacklogError) as caught:
        backlog.get_issue("ACME-1")

    assert caught.value.status == 503 and caught.value.retry_after is None


def test_it_pages_through_issues_with_status_filters(backlog, mock):
    pages = [[{"id": i} for i in range(100)], [{"id": 100}, {"id": 101}]]
    route = mock.get("/api/v2/issues").mock(side_effect=[httpx.Response(200, json=p) for p in pages])

    issues = list(backlog.iter_issues(project_id=7, status_ids=[5]))

    assert len(issues) == 102
    first, second = (call.request.url.params for call in route.calls)
    assert first.get_list("statusId[]") == ["5"] and first.get_list("projectId[]") == ["7"]
    assert (first["count"], first["offset"], second["offset"]) == ("100", "0", "100")


def test_it_resolves_statuses_by_name_and_caches_them(backlog, mock):
    route = mock.get("/api/v2/projects/ACME/statuses").respond(
        json=[{"id": 2, "name": "処理中"}, {"id": 17, "name": "automedia承認"}]
    )

    assert backlog.status_id("ACME", "automedia承認") == 17
    assert backlog.status_id("ACME", "処理中") == 2
    assert backlog.status_id("ACME", "存在しない") is None
    assert route.call_count == 1


def test_it_reads_activities_after_a_min_id_oldest_first(backlog, mock):
    route = mock.get("/api/v2/projects/ACME/activities").respond(json=[{"id": 11}])

    assert backlog.activities("ACME", min_id=10) == [{"id": 11}]
    params = route.calls.last.request.url.params
    assert (params["minId"], params["order"], params["count"]) == ("10", "asc", "100")


def test_it_reads_one_comment_by_its_id(backlog, mock):
    route = mock.get("/api/v2/issues/ACME-1/comments/50001").respond(
        json={"id": 50001, "content": "/automedia status", "createdUser": {"id": 1001}}
    )

    assert backlog.get_comment("ACME-1", 50001)["createdUser"] == {"id": 1001}
    assert route.calls.last.request.url.params["apiKey"] == "secret-key"


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.get_issue("ACME-1/../OTHER-1"),
        lambda b: b.get_issue("acme-1"),
        lambda b: b.update_issue("ACME-1?x=1", status_id=5),
        lambda b: b.add_comment("../OTHER-1", "text"),
        lambda b: b.get_comment("ACME-1", "5/../../users/myself"),
        lambda b: b.get_comment("ACME-1", 0),
        lambda b: b.issues_by_id([1, "2&apiKey=x"]),
        lambda b: b.statuses("ACME/../OTHER"),
        lambda b: b.activities("acme"),
    ],
)
def test_it_sends_nothing_for_an_identifier_out_of_format(backlog, mock, call):
    anything = mock.route().respond(200, json={})

    with pytest.raises(InvalidIdentifier) as raised:
        call(backlog)

    assert not anything.called
    assert raised.value.status == 400 and not raised.value.retryable

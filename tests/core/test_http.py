"""The outbound HTTP engines (core/http.py) against a real loopback server: libcurl
(`CurlClient`, the default) and httpx put the same request on the wire, give the same
answer back, and fail with the same httpx exceptions, so callers do not know which served."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from core.http import MAX_ANSWER_BYTES, ClientCache, CurlClient, http_client
from sandbox.echo import FakeEcho

ENGINES = ["curl", "httpx"]


@pytest.fixture
def echo():
    with FakeEcho() as fake:
        yield fake


@pytest.fixture(params=ENGINES)
def client(request, settings, echo):
    settings.OUTBOUND_HTTP_CLIENT = request.param
    made = http_client(base_url=echo.base_url + "/", headers={"Authorization": "Bearer secret"}, timeout=1.0)
    yield made
    made.close()


def test_the_default_engine_is_libcurl_and_httpx_is_chosen_by_setting_or_transport(settings):
    base = "http://127.0.0.1:9"
    assert isinstance(http_client(base_url=base, headers={}, timeout=1), CurlClient)
    transport = httpx.MockTransport(lambda request: httpx.Response(204))
    assert isinstance(http_client(base_url=base, headers={}, timeout=1, transport=transport), httpx.Client)
    settings.OUTBOUND_HTTP_CLIENT = "httpx"
    assert isinstance(http_client(base_url=base, headers={}, timeout=1), httpx.Client)


def test_a_json_post_goes_out_compact_utf8_with_its_headers_and_comes_back_as_a_response(client, echo):
    response = client.request(
        "POST", "/echo/push", json={"text": "タスクを承りました", "n": 1}, headers={"X-Line-Retry-Key": "k-1"}
    )

    assert response.status_code == 200 and response.is_success
    assert response.headers["x-echo"] == "1"
    sent = response.json()
    assert sent["method"] == "POST" and sent["path"] == "/echo/push"
    assert sent["body"] == '{"text":"タスクを承りました","n":1}'
    assert sent["headers"]["authorization"] == "Bearer secret"
    assert sent["headers"]["x-line-retry-key"] == "k-1"
    assert sent["headers"]["content-type"] == "application/json"
    assert (
        echo.received[0].body
        == json.dumps(
            {"text": "タスクを承りました", "n": 1}, ensure_ascii=False, separators=(",", ":")
        ).encode()
    )


def test_query_parameters_are_written_as_httpx_writes_them(client):
    params = [("apiKey", "k y"), ("statusId[]", "1"), ("statusId[]", "2"), ("flag", True), ("none", None)]
    sent = client.request("GET", "/echo/issues", params=params).json()
    assert sent["method"] == "GET" and sent["body"] == ""
    assert sent["query"] == "apiKey=k+y&statusId%5B%5D=1&statusId%5B%5D=2&flag=true&none="


def test_a_form_patch_and_a_raw_body_keep_their_method_and_type(client):
    sent = client.request("PATCH", "/echo/issue", data={"statusId": "4", "comment": "配信しました"}).json()
    assert sent["method"] == "PATCH"
    assert sent["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert sent["body"] == "statusId=4&comment=%E9%85%8D%E4%BF%A1%E3%81%97%E3%81%BE%E3%81%97%E3%81%9F"
    raw = client.request("PUT", "/echo/raw", content=b"abc", headers={"Content-Type": "text/plain"}).json()
    assert (raw["method"], raw["body"], raw["headers"]["content-type"]) == ("PUT", "abc", "text/plain")


def test_an_error_status_is_an_answer_not_an_exception(client):
    response = client.request("POST", "/echo", json={}, headers={"x-echo-status": "429"})
    assert response.status_code == 429 and not response.is_success
    assert response.reason_phrase == "Too Many Requests"


def test_an_encoded_answer_is_decoded(client):
    assert client.request("GET", "/gzip").json() == {"compressed": True}


def test_calls_of_one_client_share_a_kept_alive_connection(client, echo):
    for _ in range(5):
        client.request("POST", "/echo", json={})
    assert len({r.connection for r in echo.received}) == 1


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent(client, echo):
    """A stored token with a line break must not become a header of its own."""
    with pytest.raises(httpx.LocalProtocolError):
        client.request("POST", "/echo", json={}, headers={"Authorization": "Bearer x\r\nX-Injected: 1"})
    assert echo.received == []


def test_a_refused_connection_is_a_connect_error(settings):
    for engine in ENGINES:
        settings.OUTBOUND_HTTP_CLIENT = engine
        with pytest.raises(httpx.ConnectError):
            http_client(base_url="http://127.0.0.1:9", headers={}, timeout=1.0).request("GET", "/")


def test_a_slow_answer_is_a_read_timeout_once_the_request_is_out(client):
    with pytest.raises(httpx.ReadTimeout):
        client.request("POST", "/slow", json={}, headers={"x-echo-delay": "1.5"})
    assert client.request("GET", "/echo").status_code == 200  # the client is still usable


def test_a_dropped_connection_is_a_transport_error_that_may_have_reached_the_server(client, echo):
    with pytest.raises(httpx.TransportError) as caught:
        client.request("POST", "/drop", json={})
    assert not isinstance(caught.value, httpx.ConnectError | httpx.ConnectTimeout)
    assert echo.received[-1].path == "/drop"


@pytest.mark.parametrize(
    ("method", "body"), [("POST", {"json": {"publish": 1}}), ("PATCH", {"data": {"a": "1"}}), ("POST", {})]
)
def test_a_change_whose_answer_is_lost_on_a_kept_alive_connection_is_sent_once(client, echo, method, body):
    """libcurl would send it again on a new connection (a publish made twice): it must fail
    instead, as httpx does, and leave the decision to the caller's read-back."""
    client.request("GET", "/echo")  # the connection is now kept alive
    with pytest.raises(httpx.TransportError) as caught:
        client.request(method, "/drop", **body)
    assert not isinstance(caught.value, httpx.ConnectError | httpx.ConnectTimeout)
    assert [r.method for r in echo.received if r.path == "/drop"] == [method]
    assert client.request("GET", "/echo").status_code == 200


def test_libcurl_refuses_an_answer_over_the_bound(echo, monkeypatch):
    monkeypatch.setattr("core.http.MAX_ANSWER_BYTES", 1000)
    client = CurlClient(base_url=echo.base_url, headers={}, timeout=1.0)
    assert len(client.request("GET", "/big", headers={"x-echo-size": "1000"}).content) == 1000
    with pytest.raises(httpx.RemoteProtocolError, match="answer over 1000 bytes"):
        client.request("GET", "/big", headers={"x-echo-size": "1001"})
    assert MAX_ANSWER_BYTES >= 16 * 1024 * 1024


def test_threads_share_one_libcurl_client_and_it_keeps_few_connections(echo):
    client = CurlClient(base_url=echo.base_url, headers={}, timeout=2.0)
    failures: list[BaseException] = []

    def calls(n: int) -> None:
        try:
            for i in range(25):
                assert client.request("POST", "/echo", json={"thread": n, "i": i}).json()["body"]
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=calls, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert len(echo.received) == 100
    assert len({r.connection for r in echo.received}) <= 4


def test_a_closed_client_refuses_calls_and_the_cache_closes_every_client(echo):
    client = CurlClient(base_url=echo.base_url, headers={}, timeout=1.0)
    client.request("GET", "/echo")
    client.close()
    with pytest.raises(RuntimeError):
        client.request("GET", "/echo")

    cache = ClientCache(lambda base: CurlClient(base_url=base, headers={}, timeout=1.0))
    cached = cache.get(echo.base_url)
    ClientCache.clear_all()
    with pytest.raises(RuntimeError):
        cached.request("GET", "/echo")
    assert cache.get(echo.base_url) is not cached

"""core/http.py's KeptAlivePool under LINE's transport, against a scripted loopback server
that records every connection and request: keep-alive, a connection closed while idle, an
answer lost after the request was written (never resent), chunked answers, timeouts."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from deliveries.channels.base import TransportError
from deliveries.channels.line.transport import LineTransport

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-line-request-id: r1\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'5\r\n{"sen\r\nf\r\ntMessages": []}\r\n0\r\n\r\n'
)


class Scripted:
    """Answers the n-th request with script[n]: bytes to send, "close" (close the
    connection without an answer), "close-after" (answer OK, then close), or a float (wait
    that long, then answer OK)."""

    def __init__(self, script: list):
        self.script = list(script)
        self.requests: list[tuple[bytes, bytes]] = []  # (head, body)
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with conn, reader:
            while head := self._head(reader):
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                self.requests.append((head, reader.read(length)))
                answer = self.script.pop(0)
                if answer == "close":
                    return
                if isinstance(answer, float):
                    time.sleep(answer)
                conn.sendall(OK if answer in ("close-after",) or isinstance(answer, float) else answer)
                if answer == "close-after":
                    return

    @staticmethod
    def _head(reader) -> bytes:
        lines = []
        while (line := reader.readline()) not in (b"\r\n", b""):
            lines.append(line)
        return b"".join(lines)

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def server(request):
    scripted = Scripted(request.param)
    yield scripted
    scripted.close()


def line(server: Scripted, timeout: float = 5.0) -> LineTransport:
    return LineTransport(token="token", base_url=server.url, timeout=timeout)


def push(transport: LineTransport, key: str = "123e4567-e89b-12d3-a456-426614174000"):
    return transport.push(to="C" + "0" * 32, messages=[{"type": "text", "text": "撮影です"}], retry_key=key)


@pytest.mark.parametrize("server", [[OK, OK, OK]], indirect=True)
def test_it_sends_successive_requests_over_one_connection(server):
    transport = line(server)

    results = [push(transport), push(transport), transport.quota()]

    assert server.connections == 1
    assert [r.request_id for r in results[:2]] == ["r1", "r1"] and results[2] == {}
    head, body = server.requests[0]
    assert head.startswith(b"POST /v2/bot/message/push HTTP/1.1\r\n")
    assert b"x-line-retry-key: 123e4567-e89b-12d3-a456-426614174000" in head.lower()
    assert b"authorization: bearer token" in head.lower()
    assert json.loads(body) == {"to": "C" + "0" * 32, "messages": [{"type": "text", "text": "撮影です"}]}


@pytest.mark.parametrize("server", [[OK, OK]], indirect=True)
def test_it_puts_the_same_body_and_headers_on_the_wire_as_the_client_does(server):
    transport = line(server)
    body = {"to": "C1", "messages": [{"type": "text", "text": "撮影です"}]}

    transport.post_json("/v2/bot/message/push", body, {"X-Line-Retry-Key": "k"})
    transport.request("POST", "/v2/bot/message/push", json=body, headers={"X-Line-Retry-Key": "k"})

    (lean_head, lean_body), (client_head, client_body) = server.requests
    assert lean_body == client_body
    assert sorted(lean_head.lower().split(b"\r\n")) == sorted(client_head.lower().split(b"\r\n"))


@pytest.mark.parametrize("server", [["close-after", OK]], indirect=True)
def test_it_opens_a_new_connection_when_the_server_closed_the_kept_one(server):
    transport = line(server)
    push(transport)
    time.sleep(0.1)  # the server's close reaches the idle connection

    push(transport)

    assert server.connections == 2 and len(server.requests) == 2


@pytest.mark.parametrize("server", [["close", OK]], indirect=True)
def test_an_answer_lost_after_the_request_was_written_is_a_retryable_error_and_not_resent(server):
    transport = line(server)

    with pytest.raises(TransportError) as failed:
        push(transport)

    assert failed.value.permanent is False and failed.value.message.startswith("接続できませんでした")
    assert len(server.requests) == 1
    assert push(transport).request_id == "r1"  # the next one on a new connection


@pytest.mark.parametrize("server", [[CHUNKED]], indirect=True)
def test_it_reads_a_chunked_answer(server):
    assert push(line(server)).body == {"sentMessages": []}


@pytest.mark.parametrize("server", [[0.5]], indirect=True)
def test_a_slow_answer_is_a_timeout(server):
    with pytest.raises(TransportError) as failed:
        push(line(server, timeout=0.1))

    assert failed.value.permanent is False and failed.value.message.startswith("タイムアウトしました")

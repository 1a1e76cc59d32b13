"""The fake LINE's page for a browser (GET /): the messages it accepted, newest first.

LINE itself has no such page; the sandbox shows one so that a person trying automedia
sees what recipients would have received instead of an authentication error.
"""

from __future__ import annotations

import html
from datetime import datetime
from zoneinfo import ZoneInfo

from sandbox.line.records import RecordedLineRequest

SHOWN = 100
JST = ZoneInfo("Asia/Tokyo")


def received_page(sent: list[RecordedLineRequest]) -> str:
    rows = "".join(_row(request) for request in reversed(sent[-SHOWN:]))
    table = (
        "<table><thead><tr><th>受信日時</th><th>API</th><th>宛先</th><th>メッセージ</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if rows
        else '<p id="none">まだメッセージを受け取っていません。</p>'
    )
    return (
        '<!doctype html><html lang="ja"><head><meta charset="utf-8"><title>LINE サンドボックス</title>'
        '<meta http-equiv="refresh" content="5">'
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
        ".bubble{background:#8de055;border-radius:12px;padding:4px 10px;margin:2px 0;display:inline-block}"
        "</style></head><body><h1>LINE サンドボックス</h1>"
        f"<p>automedia が送った LINE メッセージ（新しい順、{len(sent)} 件）。5 秒ごとに更新します。</p>"
        f'<div id="received">{table}</div></body></html>'
    )


def _text(message: dict) -> str:
    return str(message.get("text") or "<{}>".format(message.get("type")))


def _row(request: RecordedLineRequest) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    to = body.get("to")
    count = len(to) if isinstance(to, list) else 1
    messages = "".join(
        f'<div class="bubble">{html.escape(_text(m))}</div><br>'
        for m in body.get("messages", [])
        if isinstance(m, dict)
    )
    at = datetime.fromtimestamp(request.received_at, JST).strftime("%Y-%m-%d %H:%M:%S")
    return f"<tr><td>{at}</td><td>{html.escape(request.path)}</td><td>{count} 件</td><td>{messages}</td></tr>"

"""The LINE channel's connection: the check (the token through the bot's info, the webhook
endpoint LINE has set and whether it is on) and the setup (`manage.py setup_tenant`: set the
endpoint, then LINE's own test of it, whose answer is reported).

"Use webhook" has no API: a channel whose webhook is off is listed with the console step.
"""

from __future__ import annotations

from core.connections import CheckResult
from core.transport import TransportError
from line.transport import LineTransport, line_transport


class Refused(Exception):
    """The channel's token does not work: the message names the fix."""


def check(*, tenant, webhook_url: str, command: str) -> CheckResult:
    try:
        bot, endpoint = _read(line_transport(tenant.line_channel_token))
    except Refused as exc:
        return CheckResult("line", ok=False, problem=str(exc))
    facts = (f"LINE 公式アカウント: {bot.get('displayName') or '?'}（{bot.get('basicId') or '?'}）",)
    lacks = _lacks(endpoint, webhook_url, command)
    if not tenant.line_channel_secret:  # LINE has no call that proves the secret: only its absence shows
        lacks += ("LINE チャネルシークレット（Webhook の署名を確かめるのに必要: --line-channel-secret）",)
    return CheckResult("line", ok=True, lacks=lacks, facts=facts)


def setup(*, tenant, webhook_url: str, dry_run: bool) -> list[str]:
    """Point the channel's webhook at automedia and let LINE test it; Refused when the token fails."""
    line = line_transport(tenant.line_channel_token)
    _, endpoint = _read(line)
    lines = []
    if endpoint.get("endpoint") == webhook_url:
        lines.append("LINE: Webhook URL は設定済みです。")
    elif dry_run:
        return ["LINE: Webhook URL を automedia の URL に設定します（テスト送信も行います）。"]
    else:
        _call(lambda: line.webhook_endpoint_set(webhook_url))
        lines.append("LINE: Webhook URL を設定しました。")
    if dry_run:
        return lines
    lines.append(_tested(_call(line.webhook_test)))
    if not endpoint.get("active"):
        lines.append(_OFF)
    return lines


_OFF = "LINE: 「Webhook の利用」がオフです。LINE Developers コンソール → Messaging API 設定でオンにしてください。"


def _read(line: LineTransport) -> tuple[dict, dict]:
    return _call(line.bot_info), _call(line.webhook_endpoint)


def _call(fetch):
    try:
        return fetch()
    except TransportError as exc:
        raise Refused(_problem(exc)) from exc


def _problem(exc: TransportError) -> str:
    if exc.status in (401, 403):
        return (
            f"LINE がチャネルアクセストークンを受け付けません（HTTP {exc.status}）。LINE Developers コンソール"
            " → Messaging API 設定で長期のチャネルアクセストークンを発行し、--line-channel-token"
            "（管理画面では LINE チャネルアクセストークン）に入れてください。"
        )
    if exc.status == 400:
        return f"LINE が受け付けませんでした: {exc.message}"
    return f"LINE を確認できませんでした: {exc.message}（しばらくしてから manage.py check_connections で確かめてください）"


def _lacks(endpoint: dict, webhook_url: str, command: str) -> tuple[str, ...]:
    lacks = []
    if endpoint.get("endpoint") != webhook_url:
        lacks.append(f"LINE の Webhook URL が automedia を指していません（{command}）")
    if not endpoint.get("active"):
        lacks.append("LINE の「Webhook の利用」がオフです（LINE Developers コンソールでオン）")
    return tuple(lacks)


def _tested(answer: dict) -> str:
    if answer.get("success"):
        return f"LINE: Webhook のテスト送信に成功しました（HTTP {answer.get('statusCode')}）。"
    return (
        f"LINE: Webhook のテスト送信が失敗しました（HTTP {answer.get('statusCode')}: {answer.get('reason')}"
        f" {answer.get('detail') or ''}）。automedia が外から届く URL で動いているか確かめてください。"
    )

"""The connection check every account channel shares: one documented call that proves the
token and the account (each channel's `account.check` names it), its failure said with the fix."""

from __future__ import annotations

from collections.abc import Callable

from core.connections import CheckResult
from core.transport import TransportError
from deliveries.channels.models import ChannelAccount


def account_check(
    account: ChannelAccount,
    probe: Callable[[], str],
    *,
    wrong_account: Callable[[TransportError], str] | None = None,
) -> CheckResult:
    """`probe` makes the call and answers what it found; `wrong_account` names a refusal that
    means the account id is wrong (empty when it does not)."""
    try:
        found = probe()
    except TransportError as exc:
        return CheckResult(account.channel, ok=False, problem=_problem(account, exc, wrong_account))
    return CheckResult(account.channel, ok=True, facts=(found,))


def _problem(account: ChannelAccount, exc: TransportError, wrong_account) -> str:
    label, fix = account.get_channel_display(), _fix(account)
    if exc.auth:
        return f"{label} がトークンを受け付けません（期限切れか無効）。新しいトークンを発行し、{fix} で保存してください。"
    wrong = wrong_account(exc) if wrong_account else ""
    if wrong:
        return f"{wrong} {fix} で正しい値を保存してください。"
    if exc.permanent:
        return f"{label} が受け付けませんでした: {exc.message}（{fix} で設定を確かめてください）"
    return f"{label} を確認できませんでした: {exc.message}（しばらくしてから manage.py check_connections で確かめてください）"


def _fix(account: ChannelAccount) -> str:
    return (
        f"manage.py add_channel {account.tenant.slug} {account.channel}（または管理画面のチャネルアカウント）"
    )

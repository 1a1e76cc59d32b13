"""The fake channel's token never expires."""

from __future__ import annotations

from core.models import Tenant

EXPIRED: list[str] = []


def token_expired(*, tenant: Tenant, issue_key: str, reason: str) -> None:
    EXPIRED.append(issue_key)


def renewal_advice() -> str:
    return "Fake のトークンを更新してください。"

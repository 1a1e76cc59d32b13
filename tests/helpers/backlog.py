"""Talking to the fake Backlog as automedia's tests do: issue bodies, webhooks, reading back."""

from __future__ import annotations

import json
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path

import time_machine

from tests.helpers.factories import TenantFactory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
API_KEY = "test-api-key"  # the key of the `fake_backlog` fixture (tests/conftest.py)


def load_fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def body(
    when: str = "2026-12-10 10:00", template: str = "announce_open@r1", hours: str = "7:00-18:00"
) -> str:
    return (
        "## 配信メタ\n"
        "- チャネル: LINE\n"
        f"- 投稿日時: {when} (JST)\n"
        "- 対象タグ: tag:active, !tag:opt_out\n"
        f"- テンプレ: {template}\n"
        "\n## 文面 / 変数\n"
        "- date: 2026-12-10\n"
        f"- hours: {hours}\n"
    )


def webhook_url(tenant) -> str:
    return f"/hooks/backlog/{tenant.slug}/{tenant.webhook_token}"


def post(client, url, payload, **extra):
    data = payload if isinstance(payload, str | bytes) else json.dumps(payload)
    return client.post(url, data=data, content_type="application/json", **extra)


def comment_in_backlog(fake_backlog, issue_key: str, payload: dict, **kwargs) -> dict:
    """Let the fake hold the comment a recorded type-3 payload carries: automedia runs a
    comment only as Backlog reports it (re-read by its id). Returns the payload, its
    comment id now the fake's. The fake's own webhook for it is dropped."""
    comment = payload["content"]["comment"]
    added = fake_backlog.add_comment(issue_key, comment["content"], **kwargs)
    fake_backlog.outbox.pop()
    comment["id"] = added["id"]
    return payload


def approve(fake_backlog, pump, tenant, key: str) -> None:
    fake_backlog.update_issue(key, status="automedia承認")
    pump(tenant)


def status_of(fake_backlog, key: str) -> str:
    return fake_backlog.issue(key)["status"]["name"]


# A Backlog user who is not a member of the tenant's project.
STRANGER = {
    "id": 2002,
    "userId": "guest",
    "name": "外部 ゲスト",
    "roleType": 2,
    "lang": "ja",
    "mailAddress": None,
}


def reply_to(fake_backlog, pump, tenant, key: str, text: str, *, at: datetime | None = None, **kwargs) -> str:
    """Post a comment as a user (at `at`, the clock running on), deliver the webhooks it
    makes, and return the issue's last comment: automedia's reply."""
    with time_machine.travel(at, tick=True) if at is not None else nullcontext():
        fake_backlog.add_comment(key, text, **kwargs)
        pump(tenant)
    return texts(fake_backlog, key)[-1]


def texts(fake_backlog, key: str) -> list[str]:
    """Comments with text (Backlog also lists bare change-log entries as comments)."""
    return [c["content"] for c in fake_backlog.comments(key) if c["content"]]


def second_tenant(fake_backlog, *, slug: str = "beta", project: str = "BETA", **fields):
    """Another tenant on the fake Backlog, with its own project."""
    fake_backlog.add_project(project)
    return TenantFactory(
        slug=slug,
        backlog_base_url=fake_backlog.base_url,
        backlog_api_key=API_KEY,
        backlog_project_key=project,
        **fields,
    )

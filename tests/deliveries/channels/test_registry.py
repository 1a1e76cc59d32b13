"""The registry: one package per channel, each answering every part the rest of deliveries
asks for; and a fifth channel added by the recipe of docs/ARCHITECTURE.md ("Adding a
channel"), which preview, approval, publish and write-back use without another module
knowing it."""

from __future__ import annotations

import pytest

from backlog_bridge.client import BacklogClient
from core.channels import CHANNELS, ChannelKind
from deliveries.approve.preview import preview_build, preview_comment
from deliveries.channels.registry import channel_part, kind_of
from deliveries.issues import issue_read
from deliveries.models import ContentTask, MessageTemplate
from tests.helpers.backlog import texts
from tests.helpers.deliveries import DUE, approve_issue, fire
from tests.helpers.fake_channel import publisher as fake_publisher

# What every channel answers (docs/ARCHITECTURE.md, "Adding a channel").
PARTS = {
    "publisher": ("render", "messages", "send_problems", "publish", "outcome", "outcome_lines"),
    "templates": ("template_problems",),
    "approval": ("check", "counts_others"),
    "preview": ("fill", "checked", "target"),
    "correction": ("CORRECTS", "correction_send"),
    "effects": ("planned", "measured"),
    "tokens": ("token_expired", "renewal_advice"),
}
# And what a channel that publishes one post from the tenant's account answers besides.
ACCOUNT_PARTS = {
    "publisher": ("account_problems",),
    "templates": ("validate", "describe_text", "HTML_FIELDS"),
    "tokens": ("refresh_due", "refresh"),
    "account": ("REQUIRED_ON_CREATE", "described", "report", "report_lines"),
}
FAKE_BODY = (
    "## 配信メタ\n"
    "- チャネル: Fake\n"
    "- 投稿日時: 2026-12-10 10:00 (JST)\n"
    "- 対象タグ: tag:vip\n"
    "- テンプレ: hello\n"
    "\n## 文面 / 変数\n"
    "- title: 新作\n"
)


def missing_answers(kind: str, parts: dict[str, tuple[str, ...]]) -> list[str]:
    return [
        f"{kind}.{part}.{name}"
        for part, names in parts.items()
        for name in names
        if not hasattr(channel_part(kind, part), name)
    ]


def test_each_channel_of_the_list_has_its_package_in_deliveries_channels():
    assert [c.package for c in CHANNELS.values()] == [f"deliveries.channels.{kind}" for kind in CHANNELS]


def test_every_channel_answers_every_part():
    missing = [
        name
        for kind, channel in CHANNELS.items()
        for name in missing_answers(kind, PARTS)
        + (missing_answers(kind, ACCOUNT_PARTS) if channel.account else [])
    ]

    assert len(CHANNELS) == 4
    assert missing == []


def test_it_sends_a_task_without_a_channel_of_its_own_on_the_default_channel():
    assert [kind_of("tiktok"), kind_of(""), kind_of(None), kind_of("fax")] == [
        "tiktok",
        "line",
        "line",
        "line",
    ]


# -- a fifth channel, by the recipe ------------------------------------------------------------


@pytest.fixture
def fake_channel(monkeypatch, db):
    """The recipe's one line outside the package: the channel's row in the list."""
    monkeypatch.setitem(CHANNELS, "fake", ChannelKind("Fake", "tests.helpers.fake_channel"))
    MessageTemplate.objects.create(
        name="hello", rev="r1", channel="fake", messages={"type": "note", "text": "{{ title }} を公開"}
    )
    fake_publisher.SENT.clear()
    yield "fake"
    fake_publisher.SENT.clear()


def test_the_fake_channel_answers_every_part(fake_channel):
    assert missing_answers(fake_channel, PARTS) == []


def test_an_approval_of_the_fake_channel_runs_its_checks(fake_channel, fake_backlog, pump, tenant):
    key = approve_issue(fake_backlog, pump, tenant, summary="新作", description=FAKE_BODY)

    task = ContentTask.objects.get(issue_key=key)
    assert (task.channel, task.approval_checks["lines"]) == ("fake", ["Fake 確認: tag:vip"])


def test_a_preview_of_the_fake_channel_shows_its_messages_and_audience(
    fake_channel, fake_backlog, pump, tenant
):
    key = approve_issue(fake_backlog, pump, tenant, summary="新作", description=FAKE_BODY)
    with BacklogClient.for_tenant(tenant) as backlog:
        state = issue_read(client=backlog, issue_key=key)

    preview = preview_build(tenant=tenant, issue_key=key, state=state, now=DUE, review=False)

    assert (preview.channel, preview.messages) == ("fake", [{"type": "text", "text": "新作 を公開"}])
    assert (preview.problems, preview.checks.lines) == ([], ["Fake 確認: tag:vip"])
    assert "- 配信先: Fake の受信者（tag:vip）" in preview_comment(preview)


def test_the_fake_channel_publishes_and_its_lines_are_written_back(fake_channel, fake_backlog, pump, tenant):
    key = approve_issue(fake_backlog, pump, tenant, summary="新作", description=FAKE_BODY)

    assert fire(key) == "delivered"

    assert fake_publisher.SENT == [
        {"issue_key": key, "content": {"type": "note", "text": "新作 を公開"}, "audience": "tag:vip"}
    ]
    assert "Fake に送りました: 新作 を公開" in texts(fake_backlog, key)[-1]
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"

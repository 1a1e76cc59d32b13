"""`manage.py setup_tenant SLUG` against the fakes: a bare Backlog project and a LINE channel
made ready, a second run that changes nothing, `--dry-run`, and a key without the
Administrator role."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core.models import Connection
from tests.helpers.factories import TenantFactory

BASE_URL = "http://127.0.0.1:9"  # nothing listens: LINE's webhook test reports a failure
BARE_STATUSES = [(1, "未対応"), (2, "処理中"), (3, "処理済み"), (4, "完了")]
NEEDED_STATUSES = {"automedia承認", "automedia実行済み", "automediaエラー"}


@pytest.fixture
def bare(db, fake_backlog, line):
    """A tenant on a project with Backlog's four default statuses and no custom field."""
    fake_backlog.add_project("BARE", statuses=BARE_STATUSES, custom_fields=())
    line.channel.http_hosts = frozenset({"127.0.0.1"})
    return TenantFactory(
        slug="bare",
        backlog_base_url=fake_backlog.base_url,
        backlog_api_key=fake_backlog.api_key,
        backlog_project_key="BARE",
    )


def setup(*args: str) -> str:
    out = StringIO()
    call_command("setup_tenant", *args, "--base-url", BASE_URL, stdout=out)
    return out.getvalue()


def project(fake_backlog):
    return fake_backlog._projects["BARE"]


def test_it_makes_a_bare_project_and_the_line_channel_ready(bare, fake_backlog, line):
    out = setup("bare")

    found = project(fake_backlog)
    assert NEEDED_STATUSES <= {s["name"] for s in found.statuses}
    assert {(f["name"], f["typeId"]) for f in found.custom_fields} == {
        ("投稿日時", 1),
        ("自動配信実行日時", 1),
    }
    [hook] = found.webhooks
    assert hook["hookUrl"] == f"{BASE_URL}/hooks/backlog/bare/{bare.webhook_token}"
    assert hook["allEvent"] is False and hook["activityTypeIds"] == [1, 2, 3, 4, 14, 35]
    assert line.channel.webhook_endpoint == f"{BASE_URL}/hooks/line/bare"
    assert "追加しました: 状態「automedia承認」" in out
    assert "LINE: Webhook URL を設定しました。" in out
    assert "テスト送信が失敗しました（HTTP 0" in out  # LINE's answer, reported
    assert Connection.objects.get(tenant=bare, platform="backlog").ok


def test_a_second_run_changes_nothing(bare, fake_backlog, line):
    setup("bare")
    writes = len([r for r in fake_backlog.requests if r.method != "GET"])

    out = setup("bare")

    assert len([r for r in fake_backlog.requests if r.method != "GET"]) == writes
    assert not [r for r in line.requests if r.method == "PUT"][1:]
    assert "Backlog: 変更はありません" in out
    assert "LINE: Webhook URL は設定済みです。" in out


def test_a_dry_run_lists_the_changes_and_makes_none(bare, fake_backlog, line):
    out = setup("bare", "--dry-run")

    assert "Backlog: 追加します: 状態「automediaエラー」" in out
    assert "Backlog: 追加します: カスタム属性「投稿日時」（文字列）" in out
    assert "Backlog: 追加します: automedia への Webhook" in out
    assert "LINE: Webhook URL を automedia の URL に設定します" in out
    assert [r.method for r in fake_backlog.requests if r.method != "GET"] == []
    assert line.channel.webhook_endpoint == ""


def test_a_key_without_the_administrator_role_gets_the_manual_steps(bare, fake_backlog, line):
    fake_backlog.api_user_role = 2  # 一般ユーザー

    out = setup("bare")

    assert "管理者ではないため、何も変更していません" in out
    assert "プロジェクト設定 → 状態 → 追加: 状態「automedia承認」" in out
    assert "カスタム属性 → 追加（形式: 文字列）: カスタム属性「自動配信実行日時」" in out
    assert f"Webhook → 追加: URL {BASE_URL}/hooks/backlog/bare/" in out
    assert [r.method for r in fake_backlog.requests if r.method != "GET"] == []


def test_it_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="テナント「nobody」がありません"):
        setup("nobody")


def test_it_fails_naming_the_fix_when_the_key_is_refused(bare, fake_backlog, line):
    bare.backlog_api_key = "wrong-key"
    bare.save()

    with pytest.raises(CommandError):
        setup("bare")

    row = Connection.objects.get(tenant=bare, platform="backlog")
    assert not row.ok and "API キー" in row.problem

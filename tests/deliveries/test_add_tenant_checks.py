"""`manage.py add_tenant` checks Backlog and LINE before it saves: a wrong host, key, project
key or LINE token is refused naming the fix; what the project lacks is listed, not refused;
`--no-check` saves with a warning."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core.models import Connection, Tenant

pytestmark = pytest.mark.django_db


def add(fake_backlog, *extra: str, key: str | None = None, project: str = "ACME") -> str:
    out = StringIO()
    call_command(
        "add_tenant",
        "acme",
        "--backlog-url",
        fake_backlog.base_url,
        f"--backlog-api-key={key or fake_backlog.api_key}",
        "--backlog-project",
        project,
        "--line-channel-token=line-channel-token",
        *extra,
        stdout=out,
        stderr=StringIO(),
    )
    return out.getvalue()


def test_it_saves_a_tenant_whose_connections_work_and_keeps_the_checks(fake_backlog, line):
    fake_backlog.set_webhook("ACME", "https://elsewhere.example.jp/hook")

    out = add(fake_backlog)

    tenant = Tenant.objects.get(slug="acme")
    assert "接続確認 backlog: OK" in out and "接続確認 line: OK" in out
    assert "未設定: automedia への Webhook（manage.py setup_tenant acme）" in out
    assert "未設定: LINE チャネルシークレット" in out  # LINE cannot prove a secret: only its absence shows
    rows = {c.platform: c for c in Connection.objects.filter(tenant=tenant)}
    assert rows["backlog"].ok and rows["line"].ok and rows["backlog"].checked_at is not None


def test_it_refuses_a_wrong_api_key_naming_it(fake_backlog, line):
    with pytest.raises(CommandError, match="API キーを受け付けません.*--backlog-api-key") as refused:
        add(fake_backlog, key="not-the-key")

    assert "--no-check" in str(refused.value)

    assert not Tenant.objects.exists()


def test_it_refuses_a_wrong_project_key_naming_it(fake_backlog, line):
    with pytest.raises(CommandError, match="プロジェクトキー「NOPE」のプロジェクトがない"):
        add(fake_backlog, project="NOPE")

    assert not Tenant.objects.exists()


def test_it_refuses_a_host_that_is_no_backlog_naming_it(fake_backlog, line, settings):
    out = StringIO()
    with pytest.raises(CommandError, match="「http://127.0.0.1:9」に接続できません"):
        call_command(
            "add_tenant",
            "acme",
            "--backlog-url=http://127.0.0.1:9",
            "--backlog-api-key=k",
            "--backlog-project=ACME",
            stdout=out,
        )


def test_it_refuses_a_wrong_line_token_naming_it(fake_backlog, line):
    with pytest.raises(CommandError, match="line: LINE がチャネルアクセストークンを受け付けません"):
        add(fake_backlog, "--line-channel-token=revoked-token")

    assert not Tenant.objects.exists()


def test_it_lists_what_the_project_lacks_without_refusing(fake_backlog, line):
    fake_backlog.add_project("BARE", statuses=[(1, "未対応")], custom_fields=())

    out = json.loads(add(fake_backlog, "--json", project="BARE"))

    [backlog, _line] = out["checks"]
    assert backlog["ok"] is True
    assert "状態「automedia承認」（manage.py setup_tenant acme）" in backlog["lacks"]
    assert "カスタム属性「投稿日時」（文字列、manage.py setup_tenant acme）" in backlog["lacks"]


def test_no_check_saves_without_asking_and_warns(fake_backlog):
    err = StringIO()
    call_command(
        "add_tenant",
        "acme",
        "--backlog-url=http://127.0.0.1:9",
        "--backlog-api-key=k",
        "--backlog-project=ACME",
        "--no-check",
        stdout=StringIO(),
        stderr=err,
    )

    assert Tenant.objects.filter(slug="acme").exists()
    assert "接続を確認せずに保存します" in err.getvalue()
    assert not Connection.objects.exists()


def test_an_update_that_changes_no_connection_is_not_checked(fake_backlog, line):
    add(fake_backlog)
    requests = len(fake_backlog.requests)

    call_command("add_tenant", "acme", "--operators", "id:1001", stdout=StringIO())

    assert len(fake_backlog.requests) == requests

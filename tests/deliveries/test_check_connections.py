"""`manage.py check_connections [--tenant SLUG]`: every connection checked now, each result kept;
a failure exits 1 and a later passing check clears it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core.models import Connection
from tests.helpers.factories import TenantFactory


def check(*args: str) -> str:
    out = StringIO()
    call_command("check_connections", *args, stdout=out)
    return out.getvalue()


def test_it_checks_backlog_line_and_the_accounts_and_keeps_each_result(tenant, line, ig_account):
    out = check("--tenant", "acme")

    assert "backlog: OK" in out and "line: OK" in out and "instagram: OK" in out
    rows = {c.platform: c for c in Connection.objects.filter(tenant=tenant)}
    assert set(rows) == {"backlog", "line", "instagram"} and all(row.ok for row in rows.values())
    assert "Instagram アカウント: @automedia_sandbox" in rows["instagram"].notes


def test_a_failure_exits_non_zero_and_a_passing_check_clears_it(tenant, line):
    tenant.backlog_api_key = "revoked"
    tenant.save()

    with pytest.raises(CommandError, match="1 件失敗"):
        check()
    row = Connection.objects.get(tenant=tenant, platform="backlog")
    assert not row.ok and row.failed_at is not None

    tenant.backlog_api_key = "test-api-key"
    tenant.save()
    check()

    row.refresh_from_db()
    assert row.ok and row.failed_at is None and row.problem == ""


def test_it_checks_only_the_tenant_named(tenant, line, fake_backlog):
    TenantFactory(slug="other", backlog_base_url=fake_backlog.base_url, backlog_project_key="ACME")

    check("--tenant", "acme")

    assert set(Connection.objects.values_list("tenant__slug", flat=True)) == {"acme"}


def test_it_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="テナント「nobody」がありません"):
        check("--tenant", "nobody")

"""The Backlog side of a connection (respx): the calls of the check, what a project lacks, each
refusal named with its fix, and a 401/403 at run time kept on the tenant's connection."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest
import respx

from backlog_bridge.client import BacklogClient, BacklogError, shared_client
from backlog_bridge.connection import ProjectNeeds, backlog_check, backlog_setup
from core.models import Connection
from tests.helpers.factories import TenantFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]

BASE = "https://acme.backlog.jp"
HOOK = "https://automedia.example.jp/hooks/backlog/acme/token"
NEEDS = ProjectNeeds(
    statuses=("automedia承認", "automedia実行済み", "automediaエラー"),
    fields=("投稿日時", "自動配信実行日時"),
    webhook_url=HOOK,
    activity_types=(1, 2, 3),
    command="manage.py setup_tenant acme",
)
ADMIN = {"id": 1, "userId": "bot", "name": "automedia", "roleType": 1}
STATUSES = [{"id": n, "name": name} for n, name in enumerate(["未対応", *NEEDS.statuses], 1)]
FIELDS = [{"id": 101, "name": "投稿日時"}, {"id": 102, "name": "自動配信実行日時"}]


@pytest.fixture
def acme():
    return TenantFactory(slug="acme", backlog_base_url=BASE, backlog_project_key="ACME")


@pytest.fixture
def mock():
    with respx.mock(base_url=BASE + "/api/v2", assert_all_called=False) as router:
        router.get("/users/myself").respond(json=ADMIN)
        router.get("/projects/ACME").respond(json={"id": 7, "projectKey": "ACME"})
        router.get("/projects/ACME/statuses").respond(json=STATUSES)
        router.get("/projects/ACME/customFields").respond(json=FIELDS)
        router.get("/projects/ACME/webhooks").respond(json=[{"hookUrl": HOOK, "allEvent": True}])
        yield router


def test_a_ready_project_passes_with_nothing_to_add(acme, mock):
    result = backlog_check(tenant=acme, needs=NEEDS)

    assert result.ok and result.lacks == ()
    assert result.facts == ("API キーのユーザー: automedia（管理者）",)
    assert [c.request.url.path for c in mock.calls] == [
        "/api/v2/users/myself",
        "/api/v2/projects/ACME",
        "/api/v2/projects/ACME/statuses",
        "/api/v2/projects/ACME/customFields",
        "/api/v2/projects/ACME/webhooks",
    ]


def test_it_lists_what_the_project_lacks(acme, mock):
    mock.get("/projects/ACME/statuses").respond(json=STATUSES[:2])
    mock.get("/projects/ACME/webhooks").respond(
        json=[{"hookUrl": HOOK, "allEvent": False, "activityTypeIds": [1]}]
    )

    result = backlog_check(tenant=acme, needs=NEEDS)

    assert result.ok
    assert result.lacks == (
        "状態「automedia実行済み」（manage.py setup_tenant acme）",
        "状態「automediaエラー」（manage.py setup_tenant acme）",
        "automedia への Webhook（manage.py setup_tenant acme）",
    )


def test_a_user_who_may_not_read_webhooks_is_told_so_not_refused(acme, mock):
    mock.get("/users/myself").respond(json=ADMIN | {"roleType": 2})
    mock.get("/projects/ACME/webhooks").respond(403, json={"errors": [{"message": "no", "code": 5}]})

    result = backlog_check(tenant=acme, needs=NEEDS)

    assert result.ok and "Webhook は確認できません" in result.lacks[-1]
    assert not Connection.objects.exists()  # a check's 403 is its answer, not a run-time refusal


@pytest.mark.parametrize(
    ("route", "status", "named"),
    [
        ("/users/myself", 401, "API キーを受け付けません"),
        ("/users/myself", 404, "Backlog スペースの API に答えません"),
        ("/users/myself", 302, "Backlog スペースの API に答えません"),
        ("/projects/ACME", 404, "プロジェクトキー「ACME」のプロジェクトがない"),
    ],
)
def test_each_refusal_names_what_to_fix(acme, mock, route, status, named):
    mock.get(route).respond(status, json={"errors": [{"message": "x", "code": 6}]})

    result = backlog_check(tenant=acme, needs=NEEDS)

    assert not result.ok and named in result.problem


def test_setup_sends_backlogs_documented_parameters(acme, mock):
    mock.get("/projects/ACME/statuses").respond(json=STATUSES[:3])
    mock.get("/projects/ACME/customFields").respond(json=FIELDS[:1])
    mock.get("/projects/ACME/webhooks").respond(json=[])
    status = mock.post("/projects/ACME/statuses").respond(json={"id": 9})
    field = mock.post("/projects/ACME/customFields").respond(json={"id": 103})
    hook = mock.post("/projects/ACME/webhooks").respond(json={"id": 1})

    lines = backlog_setup(tenant=acme, needs=NEEDS, dry_run=False)

    assert parse_qs(status.calls.last.request.content.decode()) == {
        "name": ["automediaエラー"],
        "color": ["#868cb7"],
    }
    assert parse_qs(field.calls.last.request.content.decode()) == {
        "typeId": ["1"],
        "name": ["自動配信実行日時"],
    }
    assert parse_qs(hook.calls.last.request.content.decode()) == {
        "name": ["automedia"],
        "description": ["automedia が課題の変更を受け取ります"],
        "hookUrl": [HOOK],
        "allEvent": ["false"],
        "activityTypeIds[]": ["1", "2", "3"],
    }
    assert lines == [
        "Backlog: 追加しました: 状態「automediaエラー」",
        "Backlog: 追加しました: カスタム属性「自動配信実行日時」（文字列）",
        "Backlog: 追加しました: automedia への Webhook",
    ]


def test_a_401_at_run_time_marks_the_tenants_backlog_connection_failed(acme):
    with respx.mock(base_url=BASE + "/api/v2") as router:
        router.get("/issues/ACME-1").respond(401, json={"errors": [{"message": "auth", "code": 11}]})
        with pytest.raises(BacklogError):
            shared_client(acme).get_issue("ACME-1")

    row = Connection.objects.get(tenant=acme, platform="backlog")
    assert not row.ok and row.failed_at is not None and "API キーを受け付けません" in row.problem


def test_a_client_of_no_tenant_records_nothing(acme):
    with respx.mock(base_url=BASE + "/api/v2") as router:
        router.get("/issues/ACME-1").respond(403, json={"errors": [{"message": "no", "code": 5}]})
        with pytest.raises(BacklogError):
            BacklogClient(base_url=BASE, api_key="k").get_issue("ACME-1")

    assert not Connection.objects.exists()

"""Every list, detail, action and export is limited to the user's tenants; viewers cannot act."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Tenant, TenantMembership
from deliveries.models import ContentTask, DeliverySchedule
from line.models import LineSource
from linepush.models import LinePushItem
from tests.helpers.console import member, task_url
from tests.helpers.factories import ContentTaskFactory, TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def tasks(tenant, other):
    return ContentTaskFactory(tenant=tenant, issue_key="ACME-1", summary="自社の告知"), ContentTaskFactory(
        tenant=other, issue_key="OTHER-1", summary="他社の告知"
    )


def test_it_lists_only_the_users_tenants(as_manager, tasks):
    page = as_manager.get(reverse("admin:deliveries_contenttask_changelist")).content.decode()

    assert "自社の告知" in page and "他社の告知" not in page


def test_it_shows_every_tenant_to_a_superuser(client, superuser, tasks):
    client.force_login(superuser)

    page = client.get(reverse("admin:deliveries_contenttask_changelist")).content.decode()

    assert "自社の告知" in page and "他社の告知" in page


@pytest.mark.parametrize("name", ["change", "preview", "history", "delete"])
def test_it_answers_404_for_another_tenants_task(as_manager, tasks, name):
    assert as_manager.get(task_url(name, tasks[1])).status_code == 404


@pytest.mark.parametrize("name", ["approve", "cancel", "retry"])
def test_it_answers_404_to_an_action_on_another_tenants_task(as_manager, tasks, name):
    response = as_manager.post(task_url(name, tasks[1]))

    assert response.status_code == 404
    assert ContentTask.objects.get(pk=tasks[1].pk).status_name == ""


@pytest.mark.parametrize(
    "path",
    [
        "/admin/core/tenant/{other.pk}/change/",
        "/admin/line/linesource/{group.pk}/change/",
        "/admin/linepush/linepushitem/{item.pk}/change/",
    ],
)
def test_it_answers_404_for_another_tenants_objects(as_manager, other, path):
    group = LineSource.objects.create(tenant=other, group_id="Cother", name="他社グループ")
    item = LinePushItem.objects.create(
        tenant=other,
        ext_group_id="Cother",
        trigger_type="reminder",
        payload=[],
        dedupe_key="k",
        scheduled_at="2026-12-01T00:00Z",
    )

    response = as_manager.get(path.format(other=other, group=group, item=item))

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("url", "mine", "theirs"),
    [
        ("admin:core_tenant_changelist", "acme", "他社事務所"),
        ("admin:line_linesource_changelist", "自社グループ", "他社グループ"),
        ("admin:linepush_linepushitem_changelist", "自社グループ", "他社グループ"),
        ("admin:console_pushapproval_changelist", "自社グループ", "他社グループ"),
    ],
)
def test_it_scopes_every_list(as_manager, tenant, other, url, mine, theirs):
    for t, name in ((tenant, "自社グループ"), (other, "他社グループ")):
        LineSource.objects.create(tenant=t, group_id=f"C{t.slug}", name=name)
        LinePushItem.objects.create(
            tenant=t,
            ext_group_id=f"C{t.slug}",
            trigger_type="escalation",
            payload=[{"type": "text", "text": "至急"}],
            dedupe_key=f"{t.slug}-key",
            scheduled_at="2026-12-01T00:00Z",
            status=LinePushItem.Status.WAITING_APPROVAL,
        )

    page = as_manager.get(reverse(url)).content.decode()

    assert mine in page and theirs not in page


def test_it_offers_only_own_tenants_in_the_tenant_filter(as_manager, manager, tasks):
    third = TenantFactory(slug="third", name="第三事務所")
    TenantMembership.objects.create(user=manager, tenant=third, role=TenantMembership.Role.VIEWER)

    page = as_manager.get(reverse("admin:deliveries_contenttask_changelist")).content.decode()

    assert "テナント で絞り込む" in page
    assert "acme 事務所" in page and "第三事務所" in page and "他社事務所" not in page


def test_it_exports_only_the_users_tasks(as_manager, tasks):
    response = as_manager.post(
        reverse("admin:deliveries_contenttask_changelist"),
        {"action": "export_csv", "select_across": "1", "_selected_action": [t.pk for t in tasks]},
    )

    text = response.content.decode("utf-8-sig")
    assert response["Content-Type"].startswith("text/csv")
    assert "ACME-1" in text and "OTHER-1" not in text


def test_it_lets_a_viewer_look_but_not_act(client, viewer, tasks):
    client.force_login(viewer)
    mine = tasks[0]

    page = client.get(task_url("change", mine)).content.decode()
    response = client.post(task_url("approve", mine))

    assert "自社の告知" in page and 'id="task-approve"' not in page and 'id="task-preview"' in page
    assert response.status_code == 403
    assert not DeliverySchedule.objects.exists()


def test_it_gives_a_viewer_no_list_toggles_or_approvals(client, viewer, tenant):
    LineSource.objects.create(tenant=tenant, group_id="Cacme", name="自社グループ")
    client.force_login(viewer)

    groups = client.get(reverse("admin:line_linesource_changelist")).content.decode()
    waiting = client.get(reverse("admin:console_pushapproval_changelist"))

    assert 'name="form-0-allow_outbound_push"' not in groups
    assert "approve_selected" not in waiting.content.decode()


def test_it_lets_a_manager_act_only_where_they_manage(client, tenant, other, tasks):
    user = member("tanaka", tenant, TenantMembership.Role.VIEWER)
    TenantMembership.objects.create(user=user, tenant=other, role=TenantMembership.Role.MANAGER)
    client.force_login(user)

    assert client.post(task_url("approve", tasks[0])).status_code == 403
    page = client.get(task_url("change", tasks[1])).content.decode()
    assert 'id="task-approve"' in page


def test_it_offers_only_managed_tenants_when_adding(as_manager, tenant, other):
    page = as_manager.get(reverse("admin:line_linesurveyrule_add")).content.decode()

    assert "acme 事務所" in page and "他社事務所" not in page


def test_it_shows_nothing_to_a_staff_user_without_membership(client, django_user_model, tasks):
    user = django_user_model.objects.create_user("nobody", "n@example.jp", "pw", is_staff=True)
    client.force_login(user)

    assert client.get(reverse("admin:deliveries_contenttask_changelist")).status_code == 403
    assert "自社の告知" not in client.get(reverse("admin:index")).content.decode()


def test_it_lets_only_superusers_add_tenants(as_manager, tenant):
    assert as_manager.get(reverse("admin:core_tenant_add")).status_code == 403
    assert as_manager.get(reverse("admin:core_tenant_change", args=[tenant.pk])).status_code == 200
    assert Tenant.objects.count() == 1


@pytest.mark.parametrize("model", ["ormq", "failure", "success", "schedule"])
def test_it_keeps_django_q_pages_reachable_for_operators(client, superuser, model):
    client.force_login(superuser)

    assert client.get(f"/admin/django_q/{model}/").status_code == 200


def test_it_shows_a_viewer_the_tenant_secrets_masked_only(client, viewer, tenant):
    client.force_login(viewer)

    page = client.get(reverse("admin:core_tenant_change", args=[tenant.pk])).content.decode()

    assert "acme" in page and "<form" in page
    for secret in (
        tenant.backlog_api_key,
        tenant.line_channel_token,
        tenant.line_channel_secret,
        tenant.webhook_token,
    ):
        assert secret not in page
    assert "秘密情報（伏せ字）" in page and 'type="password"' not in page


def test_it_lets_only_a_superuser_grant_memberships(client, superuser, manager):
    client.force_login(superuser)
    assert client.get(reverse("admin:core_tenantmembership_add")).status_code == 200

    client.force_login(manager)
    assert client.get(reverse("admin:core_tenantmembership_changelist")).status_code == 403

"""Helpers of the admin tests: members, mirrored Backlog issues, admin URLs."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from core.models import Tenant, TenantMembership
from deliveries.models import ContentTask
from tests.helpers.backlog import body


def member(username: str, tenant, role: str):
    user = get_user_model().objects.create_user(username, f"{username}@example.jp", "pw", is_staff=True)
    TenantMembership.objects.create(user=user, tenant=tenant, role=role)
    return user


def mirrored_issue(
    fake_backlog, pump, tenant, *, status: str = "処理中", description: str | None = None, **kw
):
    """An issue in the fake Backlog, its webhook delivered so automedia mirrors it as a ContentTask."""
    created = fake_backlog.create_issue(
        tenant.backlog_project_key,
        summary=kw.pop("summary", "年末告知"),
        description=body() if description is None else description,
        status=status,
        **kw,
    )
    pump(tenant)
    return ContentTask.objects.get(tenant=tenant, issue_key=created["issueKey"])


def task_url(name: str, task) -> str:
    return reverse(f"admin:deliveries_contenttask_{name}", args=[task.pk])


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def tenant_form(tenant: Tenant, **changes) -> dict:
    """Every field of the tenant's change form, as a browser would post it; without the
    connection check unless `skip_connection_check=""` (tests/console/test_connections.py)."""
    return {
        "skip_connection_check": "on",
        "slug": tenant.slug,
        "name": tenant.name,
        "backlog_base_url": tenant.backlog_base_url,
        "backlog_api_key": "",
        "backlog_project_key": tenant.backlog_project_key,
        "line_channel_token": "",
        "line_channel_secret": "",
        "operators": '["user:manager"]',
        "quiet_hours": "{}",
        "publish_time_policy": "invalidate",
        "max_concurrent_deliveries": "4",
        "is_active": "on",
        **changes,
    }


def change_url(tenant: Tenant) -> str:
    return reverse("admin:core_tenant_change", args=[tenant.pk])

"""The admin renders every list in Japanese and never shows a secret in full."""

from __future__ import annotations

import pytest

from core.models import Tenant
from tests.helpers.factories import ContentTaskFactory, TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_superuser("boss", "boss@example.jp", "pw")
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "path",
    [
        "/admin/core/tenant/",
        "/admin/deliveries/contenttask/",
        "/admin/deliveries/deliveryschedule/",
        "/admin/deliveries/messagetemplate/",
        "/admin/backlog_bridge/backlogevent/",
        "/admin/line/linecontact/",
    ],
)
def test_it_renders_each_list(staff, path):
    ContentTaskFactory(tenant=TenantFactory(slug="acme"))

    response = staff.get(path)

    assert response.status_code == 200
    assert "automedia 管理" in response.content.decode()


def test_it_never_shows_a_tenant_secret_in_full(staff):
    tenant = TenantFactory(
        slug="acme", backlog_api_key="backlog-key-abcdef123456", line_channel_token="line-token-zyxw9876"
    )

    page = staff.get(f"/admin/core/tenant/{tenant.pk}/change/").content.decode()

    assert "backlog-key-abcdef123456" not in page and "line-token-zyxw9876" not in page
    assert tenant.webhook_token not in page
    assert "3456" in page  # masked hint: last 4 characters


def test_it_keeps_a_secret_when_its_field_is_left_empty(staff):
    tenant = TenantFactory(slug="acme", backlog_api_key="backlog-key-abcdef123456")
    form = {
        "slug": "acme",
        "name": "新しい名前",
        "backlog_base_url": "https://acme.backlog.jp",
        "backlog_api_key": "",
        "backlog_project_key": "ACME",
        "line_channel_token": "",
        "line_channel_secret": "",
        "operators": "[]",
        "quiet_hours": "{}",
        "publish_time_policy": "invalidate",
        "max_concurrent_deliveries": "4",
        "is_active": "on",
    }

    response = staff.post(f"/admin/core/tenant/{tenant.pk}/change/", form)

    assert response.status_code == 302, response.content.decode()[:2000]
    tenant = Tenant.objects.get()
    assert (tenant.name, tenant.backlog_api_key) == ("新しい名前", "backlog-key-abcdef123456")


def test_it_rejects_invalid_quiet_hours_in_the_form(staff):
    tenant = TenantFactory(slug="acme")
    form = {
        "slug": "acme",
        "name": "x",
        "backlog_base_url": "https://acme.backlog.jp",
        "backlog_project_key": "ACME",
        "operators": "[]",
        # the quiet hours' widget: on, mode, time zone, then (from, to) pairs
        "quiet_hours_0": "on",
        "quiet_hours_1": "reject",
        "quiet_hours_2": "Asia/Tokyo",
        "quiet_hours_3": "25:00",
        "quiet_hours_4": "08:00",
        "publish_time_policy": "invalidate",
        "max_concurrent_deliveries": "4",
    }

    response = staff.post(f"/admin/core/tenant/{tenant.pk}/change/", form)

    assert response.status_code == 200
    assert "25:00" in response.content.decode()

"""What a superuser set, a manager cannot undo another way: the LINE post settings row, a
group's member count, a revoked API token, the tenant's slug, switch and concurrency, and
numeric limits past their bounds."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Tenant
from line.models import LinePlan, LinePushSettings, LineSource
from linepush.models import LineApiToken
from tests.helpers.console import messages_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_superuser(client, superuser):
    client.force_login(superuser)
    return client


@pytest.fixture
def settings_row(tenant):
    return LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="light"))


@pytest.fixture
def group(tenant):
    return LineSource.objects.create(tenant=tenant, group_id="C" + "1" * 32, name="撮影", member_count=500)


def tenant_form(tenant: Tenant, **changes) -> dict:
    return {
        "slug": tenant.slug,
        "name": tenant.name,
        "backlog_base_url": tenant.backlog_base_url,
        "backlog_api_key": "",
        "backlog_project_key": tenant.backlog_project_key,
        "line_channel_token": "",
        "line_channel_secret": "",
        "operators": "[]",
        "quiet_hours": "{}",
        "publish_time_policy": "invalidate",
        "max_concurrent_deliveries": str(tenant.max_concurrent_deliveries),
        "is_active": "on",
        **changes,
    }


def group_form(group: LineSource, **changes) -> dict:
    return {
        "tenant": group.tenant_id,
        "group_id": group.group_id,
        "kind": group.kind,
        "name": group.name,
        "rate_limit_count": group.rate_limit_count,
        "rate_limit_window_seconds": group.rate_limit_window_seconds,
        **changes,
    }


# -- the LINE post settings row -----------------------------------------------------------------


def test_it_lets_no_manager_delete_the_line_post_settings(as_manager, settings_row):
    url = reverse("admin:line_linepushsettings_delete", args=[settings_row.pk])

    response = as_manager.post(url, {"post": "yes"})

    assert response.status_code == 403
    assert LinePushSettings.objects.get(pk=settings_row.pk).plan.code == "light"


def test_it_lets_no_manager_add_line_post_settings(as_manager, tenant):
    response = as_manager.post(
        reverse("admin:line_linepushsettings_add"),
        {"tenant": tenant.pk, "tenant_rate_window_seconds": 300, "timezone": "Asia/Tokyo", "digest_hour": 8},
    )

    assert response.status_code == 403
    assert not LinePushSettings.objects.exists()


def test_a_superuser_deletes_the_line_post_settings(as_superuser, settings_row):
    url = reverse("admin:line_linepushsettings_delete", args=[settings_row.pk])

    response = as_superuser.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert not LinePushSettings.objects.exists()


# -- a group's member count comes from LINE -----------------------------------------------------


def test_it_ignores_a_managers_change_of_a_groups_member_count(as_manager, group):
    url = reverse("admin:line_linesource_change", args=[group.pk])
    assert 'name="member_count"' not in as_manager.get(url).content.decode()

    response = as_manager.post(url, group_form(group, member_count=1, name="新しい名前"))

    assert response.status_code == 302
    group.refresh_from_db()
    assert (group.name, group.member_count) == ("新しい名前", 500)


# -- revoking an API token is one way --------------------------------------------------------------


def test_it_keeps_a_revoked_token_revoked(as_manager, tenant):
    token, _ = LineApiToken.issue(tenant=tenant, name="talent-hub")
    token.revoke()
    url = reverse("admin:linepush_lineapitoken_change", args=[token.pk])

    as_manager.post(url, {"revoked_at_0": "", "revoked_at_1": ""})

    assert LineApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert 'name="revoked_at' not in as_manager.get(url).content.decode()


def test_a_manager_revokes_a_token_with_the_action(as_manager, tenant):
    token, _ = LineApiToken.issue(tenant=tenant, name="talent-hub")

    response = as_manager.post(
        reverse("admin:linepush_lineapitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
        follow=True,
    )

    assert LineApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert "1 件を無効化しました。" in messages_of(response)


def test_a_viewer_revokes_no_token(client, viewer, tenant):
    token, _ = LineApiToken.issue(tenant=tenant, name="talent-hub")
    client.force_login(viewer)

    client.post(
        reverse("admin:linepush_lineapitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
    )

    assert LineApiToken.objects.get(pk=token.pk).revoked_at is None


def test_it_revokes_a_token_once(tenant):
    token, _ = LineApiToken.issue(tenant=tenant, name="talent-hub")

    assert (token.revoke(), token.revoke()) == (True, False)


# -- the tenant's slug, switch and concurrency ---------------------------------------------------


def test_it_ignores_a_managers_change_of_slug_active_and_concurrency(as_manager, tenant):
    url = reverse("admin:core_tenant_change", args=[tenant.pk])
    form = tenant_form(tenant, slug="hijacked", max_concurrent_deliveries="32767", name="新しい名前")
    del form["is_active"]

    response = as_manager.post(url, form)

    assert response.status_code == 302
    saved = Tenant.objects.get(pk=tenant.pk)
    assert (saved.name, saved.slug, saved.is_active, saved.max_concurrent_deliveries) == (
        "新しい名前",
        tenant.slug,
        True,
        tenant.max_concurrent_deliveries,
    )


def test_it_bounds_the_concurrency_a_superuser_sets(as_superuser, tenant):
    url = reverse("admin:core_tenant_change", args=[tenant.pk])

    response = as_superuser.post(url, tenant_form(tenant, max_concurrent_deliveries="32767"))

    assert response.status_code == 200
    assert "同時配信数の上限は 1〜1000 で指定してください。" in response.content.decode()
    assert Tenant.objects.get(pk=tenant.pk).max_concurrent_deliveries == tenant.max_concurrent_deliveries


@pytest.mark.parametrize(
    ("field", "value"), [("rate_limit_count", 4_000_000), ("rate_limit_window_seconds", 10**9)]
)
def test_it_bounds_a_groups_rate_limit(as_manager, group, field, value):
    url = reverse("admin:line_linesource_change", args=[group.pk])

    response = as_manager.post(url, group_form(group, **{field: value}))

    assert response.status_code == 200
    group.refresh_from_db()
    assert getattr(group, field) != value


def test_it_bounds_the_digest_hour(as_manager, settings_row):
    url = reverse("admin:line_linepushsettings_change", args=[settings_row.pk])
    form = {
        "tenant": settings_row.tenant_id,
        "tenant_rate_limit": "",
        "tenant_rate_window_seconds": 300,
        "timezone": "Asia/Tokyo",
        "digest_hour": 99,
        "registration_messages": "[]",
    }

    response = as_manager.post(url, form)

    assert response.status_code == 200
    assert LinePushSettings.objects.get(pk=settings_row.pk).digest_hour == 8


# -- what a token may post -----------------------------------------------------------------------


def test_it_shows_a_manager_what_a_token_may_post_read_only(as_manager, tenant):
    token, _ = LineApiToken.issue(tenant=tenant, name="talent-hub")
    url = reverse("admin:linepush_lineapitoken_change", args=[token.pk])

    page = as_manager.get(url).content.decode()
    as_manager.post(url, {"allowed_triggers": ["task_approved", "reminder"], "skip_approval": "on"})

    assert "使えるトリガー" in page and "承認なしで投稿" in page
    assert 'name="skip_approval"' not in page and 'name="allowed_triggers"' not in page
    row = LineApiToken.objects.get(pk=token.pk)
    assert (row.allowed_triggers, row.skip_approval) == (["signal_approved"], False)


def test_a_superuser_sets_what_a_token_may_post(as_superuser, tenant):
    token, _ = LineApiToken.issue(tenant=tenant, name="talent-hub")
    url = reverse("admin:linepush_lineapitoken_change", args=[token.pk])

    response = as_superuser.post(
        url, {"allowed_triggers": ["task_approved", "reminder"], "skip_approval": "on"}
    )

    assert response.status_code == 302
    row = LineApiToken.objects.get(pk=token.pk)
    assert (row.allowed_triggers, row.skip_approval) == (["task_approved", "reminder"], True)

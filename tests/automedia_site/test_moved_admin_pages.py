"""Tenant and TenantMembership moved to core, LINE's models from linepush to line: their old
admin addresses still lead there."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/admin/deliveries/tenant/", "/admin/core/tenant/"),
        (
            "/admin/deliveries/tenant/7/change/?_changelist_filters=q",
            "/admin/core/tenant/7/change/?_changelist_filters=q",
        ),
        ("/admin/console/tenantmembership/add/", "/admin/core/tenantmembership/add/"),
        ("/admin/linepush/linecontact/", "/admin/line/linecontact/"),
        ("/admin/linepush/linepushsettings/3/change/", "/admin/line/linepushsettings/3/change/"),
    ],
)
def test_it_redirects_an_old_admin_address_to_the_moved_page(client, old, new):
    response = client.get(old)

    assert response.status_code == 302 and response["Location"] == new


def test_it_keeps_the_other_pages_of_the_old_apps_where_they_were(admin_client):
    assert admin_client.get("/admin/deliveries/contenttask/").status_code == 200
    assert admin_client.get("/admin/core/tenant/").status_code == 200
    assert admin_client.get("/admin/linepush/linepushitem/").status_code == 200
    assert admin_client.get("/admin/line/linesource/").status_code == 200

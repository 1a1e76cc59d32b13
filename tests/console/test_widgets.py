"""The settings widgets (console/widgets.py) in the tenant's form: the operators as rows of a
type and a value, saved as core's typed entries, each refused row named under it."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.http import QueryDict
from django.test import RequestFactory
from django.urls import reverse

from console.widgets import OperatorsWidget
from core.models import Tenant

pytestmark = pytest.mark.django_db


def rows(*pairs: tuple[str, str]) -> QueryDict:
    data = QueryDict(mutable=True)
    for kind, value in pairs:
        data.appendlist("operators_type", kind)
        data.appendlist("operators_value", value)
    return data


def managers_form(manager, tenant: Tenant, data: QueryDict):
    """The tenant's change form as the admin builds it for a manager, bound to `data`."""
    request = RequestFactory().post("/")
    request.user = manager
    model_admin = admin.site._registry[Tenant]
    form_class = model_admin.get_form(request, tenant, change=True)
    form = form_class(data, instance=tenant)
    return form


def form_data(tenant: Tenant, data: QueryDict) -> QueryDict:
    data.update({"name": tenant.name, "quiet_hours_2": "Asia/Tokyo", "publish_time_policy": "invalidate"})
    return data


def test_it_saves_the_rows_as_typed_entries(manager, tenant):
    data = rows(("id", " 1001 "), ("user", "yamada"), ("id", ""), ("user", "user:sato"), ("id", "1001"))

    form = managers_form(manager, tenant, form_data(tenant, data))

    assert form.is_valid(), form.errors
    form.save()
    tenant.refresh_from_db()
    # blank rows are dropped, a pasted typed entry keeps its type, a repeated one is kept once
    assert tenant.operators == ["id:1001", "user:yamada", "user:sato"]


def test_no_rows_left_is_no_operators(manager, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(operators=["id:1001"])
    tenant.refresh_from_db()

    form = managers_form(manager, tenant, form_data(tenant, rows(("id", ""))))

    assert form.is_valid(), form.errors
    form.save()
    tenant.refresh_from_db()
    assert tenant.operators == []


def test_it_refuses_a_row_and_names_the_problem_under_that_row(manager, tenant):
    data = rows(("user", "yamada"), ("id", "yamada"), ("user", "山田 太郎"))

    form = managers_form(manager, tenant, form_data(tenant, data))

    assert not form.is_valid()
    assert "「id:yamada」「user:山田 太郎」は使えません" in str(form.errors["operators"])
    html = str(form["operators"])
    rendered = html.split('<tr class="am-operator-row')[1:-1]  # the template's row last
    assert [("am-operator-invalid" in r, "am-operator-error" in r) for r in rendered] == [
        (False, False),
        (True, True),
        (True, True),
        (False, False),  # the empty row to add to
    ]
    assert "ID は Backlog の数値のユーザーIDです" in rendered[1]
    assert "ログインID に空白と「:」は使えません" in rendered[2]
    assert 'value="山田 太郎"' in rendered[2]  # what was typed stays, to be corrected


def test_it_shows_the_stored_entries_as_rows(manager, tenant):
    widget = OperatorsWidget()

    html = widget.render("operators", '["id:1001", "user:yamada"]')

    assert OperatorsWidget.rows(["id:1001", "user:yamada", "4242", "sato"]) == [
        ("id", "1001"),
        ("user", "yamada"),
        ("id", "4242"),  # untyped, read as core reads it: digits are an ID
        ("user", "sato"),
    ]
    assert html.count('name="operators_value"') == 4  # 2 entries, the empty row, the template's
    assert 'value="1001"' in html and 'value="yamada"' in html
    assert "<textarea" not in html and 'name="operators"' not in html  # no raw JSON


def test_the_manager_saves_operators_through_the_change_page(as_manager, tenant):
    page = as_manager.get(reverse("admin:core_tenant_change", args=[tenant.pk])).content.decode()
    assert 'id="operators"' in page and "console/operators.js" in page

    data = form_data(tenant, rows(("id", "1001"), ("user", "yamada")))
    response = as_manager.post(reverse("admin:core_tenant_change", args=[tenant.pk]), dict(data.lists()))

    assert response.status_code == 302, response.content.decode()[:2000]
    tenant.refresh_from_db()
    assert tenant.operators == ["id:1001", "user:yamada"]

"""LINE クーポン in the admin: a manager creates a coupon (at LINE first) with its validity
in JST, cannot edit it, and closes it; a viewer and another tenant's manager cannot."""

from __future__ import annotations

import pytest
from django.urls import reverse

from line.models import LineCoupon

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]

ADD = reverse("admin:line_linecoupon_add")
LIST = reverse("admin:line_linecoupon_changelist")


def form(tenant, **fields) -> dict:
    return {
        "tenant": tenant.pk,
        "title": "来店 10% オフ",
        "description": "",
        "reward": "discount",
        "price": "percentage",
        "amount": "10",
        "starts_at_0": "2026-12-10",
        "starts_at_1": "10:00",
        "ends_at_0": "2026-12-31",
        "ends_at_1": "23:59",
        "max_use_per_ticket": "1",
        "visibility": "UNLISTED",
        **fields,
    }


def _menu(client) -> dict[str, list[str]]:
    """The index's groups, each with its models' names."""
    app_list = client.get(reverse("admin:index")).context["app_list"]
    return {str(g["name"]): [str(m["name"]) for m in g["models"]] for g in app_list}


def test_coupons_are_in_the_managers_delivery_menu_and_open_for_them(as_manager, viewer, client):
    menu = _menu(as_manager)
    assert "LINE クーポン" in menu["配信"]
    assert all("LINE クーポン" not in models for name, models in menu.items() if name != "配信")
    assert as_manager.get(ADD).status_code == 200

    client.force_login(viewer)
    assert "LINE クーポン" in _menu(client)["配信"]
    assert client.get(ADD).status_code == 403


def test_coupons_are_not_filed_under_the_superusers_system_group(client, superuser):
    client.force_login(superuser)
    menu = _menu(client)
    assert "LINE クーポン" in menu["配信"]
    assert "LINE クーポン" not in menu.get("システム（スーパーユーザーのみ）", [])


def coupon_posts(line) -> list:
    return [r for r in line.requests if (r.method, r.path) == ("POST", "/v2/bot/coupon")]


def test_a_manager_creates_a_coupon_at_line_with_its_validity_in_jst(as_manager, tenant, line):
    response = as_manager.post(ADD, form(tenant))

    assert response.status_code == 302, response.context["adminform"].form.errors
    coupon = LineCoupon.objects.get()
    [request] = coupon_posts(line)
    assert coupon.coupon_id == request.response["couponId"] and coupon.tenant == tenant
    assert request.body["startTimestamp"] == 1796864400  # 2026-12-10 10:00 JST
    assert request.body["reward"] == {
        "type": "discount",
        "priceInfo": {"type": "percentage", "percentage": 10},
    }
    assert coupon.title in as_manager.get(LIST).content.decode()


def test_lines_refusal_is_a_form_error_and_nothing_is_stored(as_manager, tenant, line):
    line.fail_next(400, path_prefix="/v2/bot/coupon", body={"message": "The request body has 1 error(s)"})

    response = as_manager.post(ADD, form(tenant))

    assert response.status_code == 200
    assert "LINE でクーポンを作成できませんでした" in response.content.decode()
    assert not LineCoupon.objects.exists()


def test_a_coupon_that_breaks_a_rule_is_refused_before_line_is_asked(as_manager, tenant, line):
    response = as_manager.post(ADD, form(tenant, ends_at_0="2026-12-01"))

    assert (
        response.status_code == 200 and "有効期限は利用開始より後にしてください" in response.content.decode()
    )
    assert coupon_posts(line) == [] and not LineCoupon.objects.exists()


def test_a_created_coupon_cannot_be_edited(as_manager, tenant, line):
    as_manager.post(ADD, form(tenant))
    coupon = LineCoupon.objects.get()
    change = reverse("admin:line_linecoupon_change", args=[coupon.pk])

    as_manager.post(change, form(tenant, title="書き換え"))

    coupon.refresh_from_db()
    assert coupon.title == "来店 10% オフ" and len(coupon_posts(line)) == 1


def test_a_manager_closes_a_coupon_and_line_closes_it(as_manager, tenant, line):
    as_manager.post(ADD, form(tenant))
    coupon = LineCoupon.objects.get()

    response = as_manager.post(LIST, {"action": "close", "_selected_action": [coupon.pk]}, follow=True)

    coupon.refresh_from_db()
    assert coupon.status == "CLOSED"
    assert "1 件のクーポンを終了しました" in response.content.decode()
    assert [r.path for r in line.requests if r.method == "PUT"] == [
        f"/v2/bot/coupon/{coupon.coupon_id}/close"
    ]


def test_a_viewer_neither_creates_nor_closes(client, viewer, tenant, line):
    coupon = LineCoupon.objects.create(
        tenant=tenant,
        coupon_id="01JYNW8JMQVFBNWF1APF8Z3FS7",
        title="x",
        starts_at="2026-12-10T00:00+09:00",
        ends_at="2026-12-31T00:00+09:00",
    )
    client.force_login(viewer)

    assert client.post(ADD, form(tenant)).status_code == 403
    client.post(LIST, {"action": "close", "_selected_action": [coupon.pk]})

    coupon.refresh_from_db()
    assert coupon.status == "RUNNING" and line.requests == []


def test_another_tenants_manager_cannot_see_or_create_for_the_tenant(client, other_manager, tenant, line):
    coupon = LineCoupon.objects.create(
        tenant=tenant,
        coupon_id="01JYNW8JMQVFBNWF1APF8Z3FS7",
        title="x",
        starts_at="2026-12-10T00:00+09:00",
        ends_at="2026-12-31T00:00+09:00",
    )
    client.force_login(other_manager)

    assert client.get(reverse("admin:line_linecoupon_change", args=[coupon.pk])).status_code == 404
    response = client.post(ADD, form(tenant))
    assert response.status_code == 200 and "tenant" in response.context["adminform"].form.errors
    assert coupon_posts(line) == []

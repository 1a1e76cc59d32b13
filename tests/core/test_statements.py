"""INSERT and UPDATE without the ORM's compiler (core/statements.py): one statement each,
every value written as the ORM writes it, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.models import Tenant, TenantMembership
from core.statements import Held, row_insert_new, rows_insert, rows_update
from line.models import LineWebhookEvent
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

AT = datetime(2026, 12, 3, 1, 2, 3, 456789, tzinfo=UTC)


def statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as sql:
        call()
    return [q["sql"].split()[0] for q in sql.captured_queries]


def test_it_gives_each_row_its_own_values_in_one_update():
    a, b, c = (TenantFactory(slug=slug) for slug in ("a", "b", "c"))
    each = {
        "quiet_hours": {a.pk: {"start": "22:00", "end": "07:00"}, b.pk: {}},
        "line_token_invalid_at": {a.pk: AT, b.pk: None},
    }

    assert statements(lambda: rows_update(Tenant, [a.pk, b.pk], each=each, same={"name": "同じ"})) == [
        "UPDATE"
    ]

    rows = {t.pk: t for t in Tenant.objects.filter(pk__in=[a.pk, b.pk, c.pk])}
    assert rows[a.pk].quiet_hours == {"start": "22:00", "end": "07:00"}
    assert rows[a.pk].line_token_invalid_at == AT
    assert (rows[b.pk].quiet_hours, rows[b.pk].line_token_invalid_at) == ({}, None)
    assert rows[a.pk].name == rows[b.pk].name == "同じ"
    assert rows[c.pk].name == c.name  # not named: untouched


def test_it_changes_only_the_rows_that_hold_the_where_columns():
    a, b = TenantFactory(slug="a", last_activity_id=7), TenantFactory(slug="b", last_activity_id=8)

    changed = rows_update(
        Tenant,
        [a.pk, b.pk],
        each={"max_concurrent_deliveries": {a.pk: 9, b.pk: 10}},
        where={"last_activity_id": 7},
    )

    assert changed == 1
    assert list(Tenant.objects.order_by("slug").values_list("max_concurrent_deliveries", flat=True)) == [
        9,
        200,
    ]
    assert rows_update(Tenant, [a.pk], same={"name": "x"}, where={"line_token_invalid_at": None}) == 1
    assert rows_update(Tenant, [a.pk], same={"name": "y"}, where={"line_token_invalid_at": AT}) == 0
    assert Tenant.objects.get(pk=a.pk).name == "x"


def test_a_single_row_is_set_without_a_case():
    tenant = TenantFactory(slug="a")

    with CaptureQueriesContext(connection) as sql:
        rows_update(Tenant, [tenant.pk], each={"name": {tenant.pk: "一つ"}})

    assert "CASE" not in sql.captured_queries[0]["sql"]
    assert Tenant.objects.get(pk=tenant.pk).name == "一つ"


def test_it_inserts_rows_as_save_would_and_sets_their_keys():
    before = timezone.now()
    tenants = [
        Tenant(
            slug=f"t{n}",
            name=f"テナント {n}",
            backlog_base_url="https://acme.backlog.jp",
            backlog_api_key=f"key-{n}",
        )
        for n in range(3)
    ]

    assert statements(lambda: rows_insert(tenants)) == ["INSERT"]

    for tenant in tenants:
        stored = Tenant.objects.get(pk=tenant.pk)
        assert stored.slug == tenant.slug
        assert stored.backlog_api_key == tenant.backlog_api_key  # encrypted by its field, read back
        assert stored.webhook_token == tenant.webhook_token and stored.webhook_token  # the field's default
        assert (stored.operators, stored.quiet_hours, stored.max_concurrent_deliveries) == ([], {}, 200)
        assert stored.created_at >= before and stored.created_at == tenant.created_at  # auto_now_add
        assert not tenant._state.adding
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT backlog_api_key FROM {Tenant._meta.db_table} WHERE id = %s", [tenants[0].pk])
        assert "key-0" not in cursor.fetchone()[0]  # at rest: the ciphertext


def test_it_inserts_foreign_keys_from_the_related_objects():
    tenant, user = TenantFactory(slug="a"), get_user_model().objects.create_user("viewer")
    membership = TenantMembership(tenant=tenant, user=user, role=TenantMembership.Role.VIEWER)

    rows_insert([membership])

    stored = TenantMembership.objects.get(pk=membership.pk)
    assert (stored.tenant_id, stored.user_id, stored.role) == (tenant.pk, user.pk, "viewer")
    assert stored.created_at - timezone.now() < timedelta(seconds=5)


def test_an_empty_insert_makes_no_statement():
    assert statements(lambda: rows_insert([])) == []


def event(tenant, event_id: str = "e1", **fields) -> LineWebhookEvent:
    fields = {"type": "follow", "payload": {"a": [1]}} | fields
    return LineWebhookEvent(tenant=tenant, webhook_event_id=event_id, **fields)


def test_it_inserts_a_new_row_as_save_would_in_one_statement():
    row = event(TenantFactory())

    assert statements(lambda: row_insert_new(row)) == ["INSERT"]

    stored = LineWebhookEvent.objects.get(pk=row.pk)
    assert (stored.payload, stored.outcome, stored.detail, stored.attempts) == ({"a": [1]}, "pending", "", 0)
    assert stored.received_at == row.received_at and row.received_at is not None  # auto_now_add


def test_a_row_breaking_a_unique_constraint_is_not_inserted_nor_raised():
    tenant = TenantFactory()
    row_insert_new(event(tenant))
    again = event(tenant, payload={"b": 2})

    assert row_insert_new(again) is False

    assert again.pk is None and again._state.adding
    assert list(LineWebhookEvent.objects.values_list("payload", flat=True)) == [{"a": [1]}]


def test_a_row_breaking_a_check_is_refused():
    with pytest.raises(IntegrityError):
        row_insert_new(event(TenantFactory(), attempts=-1))


def test_it_inserts_only_while_the_held_row_holds_its_values_in_the_same_statement():
    tenant = TenantFactory(name="元の名前")
    held = Held(Tenant, {"id": tenant.pk, "name": "元の名前", "is_active": True})

    assert statements(lambda: row_insert_new(event(tenant, "e1"), held=held)) == ["INSERT"]
    Tenant.objects.filter(pk=tenant.pk).update(name="別の名前")
    assert row_insert_new(event(tenant, "e2"), held=held) is False

    assert list(LineWebhookEvent.objects.values_list("webhook_event_id", flat=True)) == ["e1"]

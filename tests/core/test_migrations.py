"""Tenant and TenantMembership moved to core with state-only migrations: a database at the
heads before the move migrates forward without losing a row, and the admin's log
entries and permissions follow the moved models' content types."""

from __future__ import annotations

import pytest
from django.apps import apps as current_apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from core.models import Tenant
from tests.helpers.migrations import as_stored, leaf_nodes, migrate, row_maker

# The heads of main before the move (and core not there yet).
BEFORE = [
    ("deliveries", "0008_tenant_backlog_url_check"),
    ("console", "0001_initial"),
    ("linepush", "0005_push_problems"),
    ("backlog_bridge", "0003_event_claim"),
    ("core", None),
]
MOVED = {
    ("deliveries", "Tenant"): ("core", "Tenant"),
    ("console", "TenantMembership"): ("core", "TenantMembership"),
    # Moved later, from linepush to line (tests/line/test_migrations.py).
    **{
        ("linepush", name): ("line", name)
        for name in ("LineContact", "LineMonthlyUsage", "LinePlan", "LinePushSettings", "LineSource")
        + ("LineSurveyRule", "LineWebhookEvent")
    },
}


@pytest.fixture
def old_apps(transactional_db):
    yield migrate(BEFORE)
    migrate(leaf_nodes())


def tenant_models(apps) -> list:
    """Every model of the project's apps with a foreign key to the (old) Tenant."""
    tenant = apps.get_model("deliveries", "Tenant")
    return [
        model
        for model in apps.get_models()
        if not model._meta.proxy  # console's PushApproval is LinePushItem's rows
        and any(f.is_relation and f.related_model is tenant for f in model._meta.fields)
    ]


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_row_of_a_database_at_the_old_heads(old_apps):
    make, made = row_maker(old_apps)
    OldTenant = old_apps.get_model("deliveries", "Tenant")
    OldTenant.objects.filter(pk=make(OldTenant).pk).update(slug="acme", backlog_api_key="secret-key-1234")
    for model in tenant_models(old_apps):
        make(model)
    before = {(m._meta.app_label, m.__name__): as_stored(m) for m in made}

    migrate(leaf_nodes())

    assert {
        ("console", "TenantMembership"),
        ("linepush", "LinePushItem"),
        ("backlog_bridge", "BacklogEvent"),
    } <= set(before) and len(before) > 20
    for (app_label, name), rows in before.items():
        model = current_apps.get_model(*MOVED.get((app_label, name), (app_label, name)))
        # The columns the row had (a later AddField, e.g. a claim, adds a column with a default).
        kept = list(model.objects.order_by("pk").values(*rows[0]))
        assert kept == rows, f"{app_label}.{name}"
    assert Tenant.objects.get().backlog_api_key == "secret-key-1234"  # still decrypts


@pytest.mark.django_db(transaction=True)
def test_it_moves_the_admin_history_and_permissions_with_the_models(old_apps):
    make, _ = row_maker(old_apps)
    tenant = make(old_apps.get_model("deliveries", "Tenant"))
    user = make(old_apps.get_model("auth", "User"))
    OldContentType = old_apps.get_model("contenttypes", "ContentType")
    old_type, _ = OldContentType.objects.get_or_create(app_label="deliveries", model="tenant")
    old_apps.get_model("admin", "LogEntry").objects.create(
        user_id=user.pk,
        content_type_id=old_type.pk,
        object_id=str(tenant.pk),
        object_repr="acme",
        action_flag=CHANGE,
        action_time=timezone.now(),
    )

    migrate(leaf_nodes())

    entry = LogEntry.objects.get()
    assert (
        entry.content_type == ContentType.objects.get_for_model(Tenant)
        and entry.get_edited_object().pk == tenant.pk
    )
    assert not ContentType.objects.filter(app_label__in=["deliveries", "console"], model__startswith="tenant")
    assert Permission.objects.get(codename="change_tenant").content_type.app_label == "core"
    assert Permission.objects.get(codename="change_tenantmembership").content_type.app_label == "core"


def test_it_types_the_operator_entries_of_existing_tenants(transactional_db):
    old = migrate([("core", "0002_content_types_moved")])
    OldTenant = old.get_model("core", "Tenant")
    row = OldTenant.objects.create(
        slug="acme",
        name="acme",
        backlog_base_url="https://acme.backlog.jp",
        backlog_api_key="k",
        backlog_project_key="ACME",
        operators=["1001", "yamada", "user:sato", "yamada"],
    )

    migrate(leaf_nodes())

    tenant = Tenant.objects.get(pk=row.pk)
    assert tenant.operators == ["id:1001", "user:yamada", "user:sato"]
    assert tenant.is_operator({"id": 1001, "userId": "x"}) and not tenant.is_operator(
        {"id": 5, "userId": "1001"}
    )

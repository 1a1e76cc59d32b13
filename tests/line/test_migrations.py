"""LINE's models moved from linepush to line with state-only migrations: a database at the
heads before the move migrates forward without losing a row (the tables keep their names),
and the admin's log entries and permissions follow the moved models' content types."""

from __future__ import annotations

import pytest
from django.apps import apps as current_apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from line.models import LineContact, LinePushSettings
from tests.helpers.migrations import as_stored, leaf_nodes, migrate, row_maker

# The heads of main before the move (and line not there yet).
BEFORE = [
    ("core", "0006_tenant_preview_image_hosts"),
    ("backlog_bridge", "0005_event_outcome_rejected"),
    ("deliveries", "0017_attempt_labels"),
    ("linepush", "0020_usage_month_help"),
    ("console", "0004_notices_and_test_recipients"),
    ("line", None),
]
MOVED = (
    "LineAnswer",
    "LineContact",
    "LineCoupon",
    "LineErasure",
    "LineMonthlyUsage",
    "LinePlan",
    "LinePushSettings",
    "LineSource",
    "LineSurveyRule",
    "LineWebhookEvent",
)


@pytest.fixture
def old_apps(transactional_db):
    yield migrate(BEFORE)
    migrate(leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_row_of_the_moved_models_and_of_those_that_stay(old_apps):
    make, made = row_maker(old_apps)
    for name in (*MOVED, "LinePushItem", "LineApiToken", "LineTriggerPolicy"):
        make(old_apps.get_model("linepush", name))
    old_settings = make(old_apps.get_model("linepush", "LinePushSettings"))
    plan = make(old_apps.get_model("linepush", "LinePlan"))
    type(old_settings).objects.update(plan=plan)
    before = {m.__name__: as_stored(m) for m in made if m._meta.app_label == "linepush"}

    migrate(leaf_nodes())

    assert set(MOVED) <= set(before)
    for name, rows in before.items():
        model = current_apps.get_model("line" if name in MOVED else "linepush", name)
        assert list(model.objects.order_by("pk").values(*rows[0])) == rows, name
    assert LinePushSettings.objects.get().plan.monthly_messages == 7  # the foreign key between moved models


@pytest.mark.django_db(transaction=True)
def test_it_moves_the_admin_history_and_permissions_with_the_models(old_apps):
    make, _ = row_maker(old_apps)
    contact = make(old_apps.get_model("linepush", "LineContact"))
    user = make(old_apps.get_model("auth", "User"))
    OldContentType = old_apps.get_model("contenttypes", "ContentType")
    old_type, _ = OldContentType.objects.get_or_create(app_label="linepush", model="linecontact")
    old_apps.get_model("admin", "LogEntry").objects.create(
        user_id=user.pk,
        content_type_id=old_type.pk,
        object_id=str(contact.pk),
        object_repr="U1",
        action_flag=CHANGE,
        action_time=timezone.now(),
    )

    migrate(leaf_nodes())

    entry = LogEntry.objects.get()
    assert entry.content_type == ContentType.objects.get_for_model(LineContact)
    assert entry.get_edited_object().pk == contact.pk
    assert not ContentType.objects.filter(app_label="linepush", model__in=[m.lower() for m in MOVED])
    assert Permission.objects.get(codename="change_linecontact").content_type.app_label == "line"
    assert Permission.objects.get(codename="change_linepushitem").content_type.app_label == "linepush"

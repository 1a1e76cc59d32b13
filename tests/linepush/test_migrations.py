"""linepush 0004: dedupe keys per tenant; items queued before it keep the retry key they were sent with."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from linepush.models import RETRY_KEY_NAMESPACE, LinePushItem
from tests.helpers.factories import TenantFactory

BEFORE = [("linepush", "0003_line_plans")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def old_schema(transactional_db):
    apps = migrate(BEFORE)
    yield apps
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_an_item_attempted_before_the_upgrade_keeps_its_old_retry_key(old_schema):
    tenant = TenantFactory(slug="acme")
    OldItem = old_schema.get_model("linepush", "LinePushItem")
    now = timezone.now()
    OldItem.objects.create(
        tenant_id=tenant.pk,
        ext_group_id="Cgroup",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "明日"}],
        dedupe_key="reminder:acme:ACME-1:2026-12-10",
        scheduled_at=now,
        status="pending",
        attempt_count=1,  # a 500 or a timeout: LINE may have accepted it
        first_attempt_at=now,
    )

    # Up to the latest migration (0004 and those after it): the model below is today's.
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    item = LinePushItem.objects.get()
    # The key of the first attempt (uuid5 of the dedupe key alone), so LINE still answers 409.
    assert item.retry_key == str(uuid.uuid5(RETRY_KEY_NAMESPACE, "reminder:acme:ACME-1:2026-12-10"))
    other = TenantFactory(slug="other")
    new = LinePushItem.objects.create(
        tenant=other,
        ext_group_id="Cgroup",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "明日"}],
        dedupe_key=item.dedupe_key,
        scheduled_at=now,
    )
    assert new.retry_key == str(uuid.uuid5(RETRY_KEY_NAMESPACE, f"{other.pk}:{item.dedupe_key}"))
    assert new.retry_key != item.retry_key

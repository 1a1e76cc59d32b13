"""The cast of the managers' admin: two tenants on the fake Backlog, their managers and a viewer."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import translation

from core.models import TenantMembership
from tests.helpers.backlog import API_KEY
from tests.helpers.browser_scene import build_scene
from tests.helpers.console import member
from tests.helpers.factories import TenantFactory


@pytest.fixture(autouse=True)
def _default_language():
    """A request in English leaves English active in the thread (LocaleMiddleware): not for the next test."""
    yield
    translation.deactivate()


@pytest.fixture
def other(db, fake_backlog):
    """A second tenant (project OTHER) on the same fake Backlog."""
    fake_backlog.add_project("OTHER")
    return TenantFactory(
        slug="other",
        name="他社事務所",
        backlog_base_url=fake_backlog.base_url,
        backlog_api_key=API_KEY,
        backlog_project_key="OTHER",
    )


@pytest.fixture
def manager(tenant):
    return member("yamada", tenant, TenantMembership.Role.MANAGER)


@pytest.fixture
def viewer(tenant):
    return member("sato", tenant, TenantMembership.Role.VIEWER)


@pytest.fixture
def other_manager(other):
    return member("suzuki", other, TenantMembership.Role.MANAGER)


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser("root", "root@example.jp", "pw")


@pytest.fixture
def as_manager(client, manager):
    client.force_login(manager)
    return client


@pytest.fixture
def scene(fake_backlog, pump, tenant, other, template, contacts, line):
    """Two tenants: acme (with tasks, a waiting post, a group and a week of history) and other."""
    return build_scene(fake_backlog, pump, tenant, other, line)

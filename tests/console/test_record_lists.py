"""The lists of stored events stay a fixed number of queries as the tables grow: the
tenant column is joined, and the type filter lists known types without reading the table."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from backlog_bridge.models import BacklogEvent
from line.models import LineWebhookEvent
from tests.helpers.factories import TenantFactory

pytestmark = pytest.mark.django_db

LISTS = ["admin:line_linewebhookevent_changelist", "admin:backlog_bridge_backlogevent_changelist"]


def store(count: int, start: int) -> None:
    for n in range(start, start + count):
        tenant = TenantFactory(slug=f"t{n}")  # a tenant per row: a lookup per row would show
        BacklogEvent.objects.create(tenant=tenant, activity_id=n, type=2, payload={})
        LineWebhookEvent.objects.create(tenant=tenant, webhook_event_id=f"e{n}", type="follow", payload={})


def queries(client, name: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse(name))
    assert response.status_code == 200
    return len(captured), " ".join(q["sql"] for q in captured)


@pytest.mark.parametrize("name", LISTS)
def test_a_list_of_events_reads_as_many_queries_for_30_rows_as_for_3(client, superuser, name):
    client.force_login(superuser)
    store(3, 1)
    queries(client, name)  # the first page of a session also reads what is then cached
    few, _ = queries(client, name)
    store(27, 4)

    many, sql = queries(client, name)

    assert many == few
    assert "DISTINCT" not in sql


def test_the_type_filter_lists_the_handled_types_and_filters_on_one(client, superuser):
    client.force_login(superuser)
    store(1, 1)
    LineWebhookEvent.objects.create(
        tenant=TenantFactory(slug="x"), webhook_event_id="m", type="message", payload={}
    )

    page = client.get(reverse(LISTS[0]), {"type": "message"}).content.decode()

    assert "?type=memberJoined" in page
    assert ">m<" in page and ">e1<" not in page


@pytest.mark.parametrize("model", [BacklogEvent, LineWebhookEvent])
def test_an_events_page_says_how_it_ended_in_the_admins_language(client, superuser, model):
    client.force_login(superuser)
    own = (
        {"activity_id": 1, "type": 2}
        if model is BacklogEvent
        else {"webhook_event_id": "e1", "type": "follow"}
    )
    event = model.objects.create(
        tenant=TenantFactory(slug="t1"),
        payload={},
        outcome="rejected",
        detail="gave up after 5 attempts: HTTP 503",
        **own,
    )
    opts = model._meta

    page = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[event.pk]))

    assert page.status_code == 200
    assert "5 回失敗したため中止: HTTP 503" in page.content.decode()


@pytest.mark.parametrize("name", LISTS)
def test_a_list_of_events_counts_its_rows_once(client, superuser, name):
    client.force_login(superuser)
    store(3, 1)

    _, sql = queries(client, name)

    assert sql.upper().count("COUNT(") == 1  # no second count of the whole table

"""The content-task list and detail page: what a manager reads before and after a delivery."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from core.models import TenantMembership
from deliveries.models import ContentTask, DeliveryAttempt
from tests.helpers.console import member, task_url
from tests.helpers.deliveries import fire
from tests.helpers.factories import ContentTaskFactory


def test_it_lists_tasks_with_the_backlog_link_due_time_and_last_attempt(client, approved, tenant):
    key = approved()
    fire(key)
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))

    page = client.get(reverse("admin:deliveries_contenttask_changelist")).content.decode()

    assert f'href="{tenant.backlog_base_url}/view/{key}" target="_blank"' in page
    assert "automedia実行済み" in page
    assert '<span class="am-outcome am-outcome-sent">送信済み (200)</span>' in page


def test_it_searches_by_key_and_summary(client, approved, tenant):
    key = approved()
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))
    url = reverse("admin:deliveries_contenttask_changelist")

    assert key in client.get(url, {"q": "年末"}).content.decode()
    assert key not in client.get(url, {"q": "存在しない件名"}).content.decode()


def test_it_shows_every_attempt_and_the_write_back_on_the_task_page(client, approved, tenant, line):
    key = approved()
    fire(key)
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))
    task = ContentTask.objects.get(issue_key=key)
    page = client.get(task_url("change", task)).content.decode()

    attempt = DeliveryAttempt.objects.get(task=task)
    assert attempt.request_id and attempt.request_id in page
    assert "/v2/bot/message/multicast" in page
    assert "完了: 自動配信実行日時" in page
    assert "tag:active, !tag:opt_out" in page  # the parsed fields
    assert 'id="task-approve"' not in page and 'id="task-cancel"' not in page  # delivered: nothing to do


def test_it_exports_a_summary_that_looks_like_a_formula_as_text(client, tenant):
    task = ContentTaskFactory(tenant=tenant, summary='=HYPERLINK("http://evil")')
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))

    response = client.post(
        reverse("admin:deliveries_contenttask_changelist"),
        {"action": "export_csv", "_selected_action": [task.pk]},
    )

    assert "'=HYPERLINK" in response.content.decode("utf-8-sig")


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_it_exports_every_formula_start_owasp_lists_as_text(client, tenant, start):
    task = ContentTaskFactory(tenant=tenant, summary=f'{start}HYPERLINK("http://evil")')
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))

    response = client.post(
        reverse("admin:deliveries_contenttask_changelist"),
        {"action": "export_csv", "_selected_action": [task.pk]},
    )

    [row] = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))[1:]
    assert row[2] == f'\'{start}HYPERLINK("http://evil")'

"""The approval-time checks in the admin: kept on the task page, and the LINE plan they
count against, which only a superuser sets."""

from __future__ import annotations

import pytest
from django.urls import reverse

from deliveries.models import ContentTask, DeliverySchedule, MessageTemplate
from line.models import LinePlan, LinePushSettings
from tests.helpers.backlog import status_of
from tests.helpers.console import messages_of, mirrored_issue, task_url


@pytest.fixture
def settings_row(tenant):
    return LinePushSettings.objects.create(tenant=tenant, plan=LinePlan.objects.get(code="light"))


def settings_form(row, **changes) -> dict:
    form = {
        "tenant": row.tenant_id,
        "plan": row.plan_id,
        "tenant_rate_limit": "",
        "tenant_rate_window_seconds": row.tenant_rate_window_seconds,
        "timezone": row.timezone,
        "digest_hour": row.digest_hour,
        "registration_messages": "[]",
    }
    return form | changes


def change_url(row) -> str:
    return reverse("admin:line_linepushsettings_change", args=[row.pk])


def test_the_task_page_shows_what_the_approval_checked(as_manager, approved, line):
    line.set_quota(type="limited", value=200, total_usage=182)
    task = ContentTask.objects.get(issue_key=approved())

    page = as_manager.get(task_url("change", task)).content.decode()

    start = page.index('<div id="approval-checks">')
    panel = page[start : page.index("</div>", start)]
    assert "<li>LINE 検証: OK</li>" in panel
    assert "確認日時: 2026-12-01 09:00:00 (JST)" in panel
    assert (
        "<li>クォータ見込み: 3 通（今月 182 / LINE の上限 200）（プラン未設定のため LINE の上限 200 通で判定）</li>"
        in panel
    )


def test_the_admins_approve_runs_the_checks_and_says_why_it_refused(
    as_manager, fake_backlog, pump, tenant, contacts, line
):
    sticker = {"type": "sticker", "packageId": 446, "stickerId": "1988"}  # LINE wants strings
    MessageTemplate.objects.create(name="announce_open", rev="r1", messages=[sticker])
    task = mirrored_issue(fake_backlog, pump, tenant)

    response = as_manager.post(task_url("approve", task), follow=True)

    assert not DeliverySchedule.objects.filter(task=task).exists()
    assert status_of(fake_backlog, task.issue_key) == "automediaエラー"
    [message] = messages_of(response)
    assert "messages[0].packageId: Must be a string" in message
    page = as_manager.get(task_url("change", task)).content.decode()
    assert "messages[0].packageId: Must be a string" in page


def test_a_manager_sees_the_plan_but_cannot_change_it(as_manager, settings_row):
    standard = LinePlan.objects.get(code="standard")

    page = as_manager.get(change_url(settings_row)).content.decode()
    response = as_manager.post(
        change_url(settings_row), settings_form(settings_row, plan=standard.pk, digest_hour=9)
    )

    assert 'name="plan"' not in page and "ライトプラン" in page
    assert response.status_code == 302
    saved = LinePushSettings.objects.get(pk=settings_row.pk)
    assert (saved.plan.code, saved.digest_hour) == ("light", 9)  # the rest of the settings stay theirs


def test_a_superuser_sets_the_plan(client, superuser, settings_row):
    client.force_login(superuser)
    standard = LinePlan.objects.get(code="standard")

    response = client.post(change_url(settings_row), settings_form(settings_row, plan=standard.pk))

    assert response.status_code == 302
    assert LinePushSettings.objects.get(pk=settings_row.pk).plan == standard

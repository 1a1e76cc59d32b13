"""LINE groups (toggles in the list), the 承認待ち page and the push queue's retry."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from core.models import TenantMembership
from core.timeutil import fmt_jst
from line.models import LineSource
from linepush.models import LineApiToken, LinePushAttempt, LinePushItem, token_space
from tests.helpers.console import member, messages_of
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db
Status = LinePushItem.Status


def item(
    tenant, *, status=Status.WAITING_APPROVAL, key="esc-1", text="ACME-1 が配信エラーのままです"
) -> LinePushItem:
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="Cgroup",
        trigger_type="escalation",
        payload=[{"type": "text", "text": text}],
        dedupe_key=key,
        scheduled_at=timezone.now(),
        status=status,
    )


@pytest.fixture
def group(tenant):
    return LineSource.objects.create(tenant=tenant, group_id="Cgroup", name="タレント連絡")


def test_it_lists_only_waiting_items_on_the_approval_page(as_manager, tenant, group):
    item(tenant, key="waiting", text="承認してほしい投稿")
    item(tenant, key="sent", status=Status.SENT, text="送信済みの投稿")

    page = as_manager.get(reverse("admin:console_pushapproval_changelist")).content.decode()

    assert "承認してほしい投稿" in page and "送信済みの投稿" not in page
    assert "タレント連絡" in page and 'data-action="approve"' in page


def test_it_approves_a_waiting_item_as_the_acting_user(as_manager, manager, tenant, group):
    waiting = item(tenant)

    response = as_manager.post(reverse("admin:console_pushapproval_approve", args=[waiting.pk]), follow=True)

    waiting.refresh_from_db()
    assert (waiting.status, waiting.approved_by, waiting.approved_at is not None) == (
        Status.PENDING,
        manager,
        True,
    )
    assert f"{waiting}を承認しました。送信待ちに入ります。" in messages_of(response)
    assert str(waiting).startswith("エスカレーション（")  # the trigger and time, not the dedupe key
    assert LogEntry.objects.get(object_id=str(waiting.pk)).change_message == "LINE 投稿を承認"


def test_it_rejects_a_waiting_item(as_manager, manager, tenant, group):
    waiting = item(tenant)

    as_manager.post(reverse("admin:console_pushapproval_reject", args=[waiting.pk]))

    waiting.refresh_from_db()
    assert (waiting.status, waiting.rejected_by) == (Status.SKIPPED, manager)


def test_it_approves_a_selection_in_bulk(as_manager, tenant, group):
    items = [item(tenant, key=f"esc-{n}") for n in range(3)]

    response = as_manager.post(
        reverse("admin:console_pushapproval_changelist"),
        {"action": "approve_selected", "_selected_action": [i.pk for i in items]},
        follow=True,
    )

    assert "3 件を承認しました。" in messages_of(response)
    assert set(LinePushItem.objects.values_list("status", flat=True)) == {Status.PENDING}


def test_it_does_not_approve_an_item_twice(as_manager, tenant, group):
    waiting = item(tenant)
    as_manager.post(reverse("admin:console_pushapproval_approve", args=[waiting.pk]))

    response = as_manager.post(reverse("admin:console_pushapproval_approve", args=[waiting.pk]))

    assert response.status_code == 404  # no longer on the 承認待ち page


def test_it_retries_a_failed_item(as_manager, manager, tenant, group):
    failed = item(tenant, status=Status.FAILED)
    LinePushItem.objects.filter(pk=failed.pk).update(attempt_count=3, last_error="LINE 500")

    page = as_manager.get(reverse("admin:linepush_linepushitem_change", args=[failed.pk])).content.decode()
    response = as_manager.post(reverse("admin:linepush_linepushitem_retry", args=[failed.pk]), follow=True)

    failed.refresh_from_db()
    assert 'id="item-retry"' in page
    assert (failed.status, failed.attempt_count, failed.last_error) == (Status.PENDING, 0, "")
    assert f"{failed}を送信待ちに戻しました。" in messages_of(response)
    assert LogEntry.objects.filter(user=manager, change_message="LINE 投稿を再実行").exists()


def test_it_retries_only_failed_items(as_manager, tenant, group):
    sent = item(tenant, status=Status.SENT)

    response = as_manager.post(reverse("admin:linepush_linepushitem_retry", args=[sent.pk]), follow=True)

    assert f"{sent}は失敗した投稿ではありません。" in messages_of(response)
    assert LinePushItem.objects.get(pk=sent.pk).status == Status.SENT


def test_it_filters_items_by_status_and_shows_errors(as_manager, tenant, group):
    failed = item(tenant, status=Status.FAILED, key="failed-1", text="失敗した投稿")
    LinePushItem.objects.filter(pk=failed.pk).update(last_error="グループの上限を超えました")
    item(tenant, status=Status.SENT, key="sent-1", text="送信済みの投稿")

    page = as_manager.get(
        reverse("admin:linepush_linepushitem_changelist") + "?status__exact=failed"
    ).content.decode()

    assert "失敗した投稿" in page and "送信済みの投稿" not in page and "グループの上限を超えました" in page
    assert "タレント連絡" in page and "failed-1" not in page  # the group by name; no dedupe key


def test_it_shows_where_each_item_came_from(as_manager, tenant, group):
    token = LineApiToken.issue(tenant=tenant, name="talent-hub")[0]
    LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="Cgroup",
        trigger_type="signal_approved",
        payload=[{"type": "text", "text": "外部シグナル"}],
        dedupe_key="from-api",
        dedupe_space=token_space(token),
        origin="api",
        api_token=token,
        scheduled_at=timezone.now(),
    )
    produced = item(tenant, key="from-producer")
    LinePushItem.objects.filter(pk=produced.pk).update(origin="failure_notice")

    page = as_manager.get(reverse("admin:linepush_linepushitem_changelist")).content.decode()
    detail = as_manager.get(
        reverse("admin:linepush_linepushitem_change", args=[produced.pk])
    ).content.decode()

    assert "発生元" in page and f"API トークン「{token}」" in page and "automedia（配信失敗の通知）" in page
    assert "automedia（配信失敗の通知）" in detail


def test_a_manager_neither_adds_nor_deletes_a_group_row(as_manager, group):
    add = as_manager.get(reverse("admin:line_linesource_add"))
    delete = as_manager.post(reverse("admin:line_linesource_delete", args=[group.pk]), {"post": "yes"})
    bulk = as_manager.post(
        reverse("admin:line_linesource_changelist"),
        {"action": "delete_selected", "_selected_action": [group.pk], "post": "yes"},
    )

    assert (add.status_code, delete.status_code) == (403, 403)
    assert bulk.status_code in (200, 302) and LineSource.objects.filter(pk=group.pk).exists()


def test_a_group_rows_id_stays_when_its_page_is_saved(client, superuser, group):
    """Not even a superuser moves a row onto another group's id (its member count would go with it)."""
    client.force_login(superuser)
    url = reverse("admin:line_linesource_change", args=[group.pk])
    form = {
        "tenant": group.tenant_id,
        "group_id": "C" + "9" * 32,
        "kind": "group",
        "name": "改名",
        "push_opt_in_triggers": [],
        "rate_limit_count": 3,
        "rate_limit_window_seconds": 300,
    }

    response = client.post(url, form)

    group.refresh_from_db()
    assert response.status_code == 302 and (group.group_id, group.name) == ("Cgroup", "改名")


def test_a_superuser_adds_and_deletes_a_group_row(client, superuser, tenant, group):
    client.force_login(superuser)

    assert client.get(reverse("admin:line_linesource_add")).status_code == 200
    client.post(reverse("admin:line_linesource_delete", args=[group.pk]), {"post": "yes"})
    assert not LineSource.objects.filter(pk=group.pk).exists()


def toggle_form(group: LineSource, *, allow: bool, triggers: list[str]) -> dict:
    form = {
        "form-TOTAL_FORMS": "1",
        "form-INITIAL_FORMS": "1",
        "form-0-id": str(group.pk),
        "form-0-push_opt_in_triggers": triggers,
        "_save": "保存",
    }
    if allow:
        form["form-0-allow_outbound_push"] = "on"
    return form


def test_it_toggles_a_group_in_the_list(as_manager, manager, group):
    url = reverse("admin:line_linesource_changelist")
    assert 'name="form-0-allow_outbound_push"' in as_manager.get(url).content.decode()

    response = as_manager.post(url, toggle_form(group, allow=True, triggers=["reminder", "escalation"]))

    assert response.status_code == 302
    group.refresh_from_db()
    assert (group.allow_outbound_push, group.push_opt_in_triggers) == (True, ["reminder", "escalation"])
    entry = LogEntry.objects.get(object_id=str(group.pk))
    assert entry.user == manager
    page = as_manager.get(reverse("admin:line_linesource_change", args=[group.pk])).content.decode()
    assert "yamada" in page and "自動投稿を許可" in page  # the audit trail on the group's page


def test_it_refuses_an_unknown_trigger(as_manager, group):
    url = reverse("admin:line_linesource_changelist")

    response = as_manager.post(url, toggle_form(group, allow=True, triggers=["anything"]))

    assert response.status_code == 200
    group.refresh_from_db()
    assert (group.allow_outbound_push, group.push_opt_in_triggers) == (False, [])


def test_it_shows_the_attempts_and_who_acted_on_the_item_page(as_manager, tenant, group):
    waiting = item(tenant)
    as_manager.post(reverse("admin:console_pushapproval_approve", args=[waiting.pk]))
    LinePushAttempt.objects.create(
        item=waiting, retry_key="k", status_code=500, request_id="req-123", outcome="retry"
    )

    page = as_manager.get(reverse("admin:linepush_linepushitem_change", args=[waiting.pk])).content.decode()

    assert "LINE 側でエラーが起きました" not in page  # an attempt without an error: no explanation
    assert "再試行" in page and "req-123" not in page  # LINE's request id is the superusers'
    assert "yamada" in page and "LINE 投稿を承認" in page


def test_it_refuses_a_list_edit_of_a_group_the_user_only_views(client, tenant, other, group):
    user = member("tanaka", tenant, TenantMembership.Role.VIEWER)
    TenantMembership.objects.create(user=user, tenant=other, role=TenantMembership.Role.MANAGER)
    client.force_login(user)

    response = client.post(
        reverse("admin:line_linesource_changelist"), toggle_form(group, allow=True, triggers=[])
    )

    assert response.status_code == 200 and "閲覧のみのテナントの行" in response.content.decode()
    assert LineSource.objects.get(pk=group.pk).allow_outbound_push is False


def resume(client, *items):
    form = {"action": "resume_held", "_selected_action": [i.pk for i in items]}
    return client.post(reverse("admin:linepush_linepushitem_changelist"), form, follow=True)


def test_it_resumes_only_the_selected_held_item(as_manager, manager, tenant, group):
    chosen, other = (
        item(tenant, status=Status.HELD, key="held-1"),
        item(tenant, status=Status.HELD, key="held-2"),
    )

    response = resume(as_manager, chosen)

    chosen.refresh_from_db()
    other.refresh_from_db()
    assert (chosen.status, other.status) == (Status.PENDING, Status.HELD)
    assert "1 件を送信待ちに戻しました。" in messages_of(response)
    assert (
        LogEntry.objects.get(object_id=str(chosen.pk), user=manager).change_message
        == "保留中の LINE 投稿を再開"
    )


def test_it_lets_no_viewer_resume_held_items(client, viewer, tenant, group):
    held = item(tenant, status=Status.HELD)
    client.force_login(viewer)

    resume(client, held)

    held.refresh_from_db()
    assert held.status == Status.HELD and not LogEntry.objects.exists()


def test_it_lets_no_one_add_a_push_item_in_the_admin(client, as_manager, superuser, tenant, group):
    add = reverse("admin:linepush_linepushitem_add")
    form = {
        "tenant": str(tenant.pk),
        "ext_group_id": "Cgroup",
        "trigger_type": "escalation",
        "payload": '[{"type": "bogus"}]',
        "dedupe_key": "taken-first",
        "scheduled_at_0": "2026-12-01",
        "scheduled_at_1": "09:00:00",
    }

    assert as_manager.get(add).status_code == 403
    assert as_manager.post(add, form).status_code == 403
    client.force_login(superuser)
    assert client.get(add).status_code == 403
    assert not LinePushItem.objects.exists()


def test_it_refuses_a_managers_edit_of_a_push_item(as_manager, tenant, group):
    waiting = item(tenant)
    form = {
        "trigger_type": "reminder",
        "payload": '[{"type": "text", "text": "書き換え"}]',
        "dedupe_key": "x",
    }

    response = as_manager.post(reverse("admin:linepush_linepushitem_change", args=[waiting.pk]), form)

    assert response.status_code == 403
    waiting.refresh_from_db()
    assert (waiting.trigger_type, waiting.dedupe_key) == ("escalation", "esc-1")


def test_it_shows_a_manager_the_post_as_a_bubble_and_keeps_the_machinery_for_superusers(
    client, as_manager, superuser, tenant, group
):
    failed = item(tenant, status=Status.FAILED, key="demo:reminder:1", text="撮影は 14 時からです")
    error = "リクエストが拒否されました（400）: The request body has 1 error(s) / messages[0].text: May not be empty"
    LinePushItem.objects.filter(pk=failed.pk).update(last_error=error, claimed_by="web-1:pusher")
    LinePushAttempt.objects.create(
        item=failed, retry_key="k-1", status_code=400, outcome="failed", error=error
    )
    url = reverse("admin:linepush_linepushitem_change", args=[failed.pk])

    page = as_manager.get(url).content.decode()

    assert '<div class="am-bubble" data-kind="text">' in page and "撮影は 14 時からです" in page
    assert "タレント連絡" in page and "エスカレーション" in page
    assert (
        "メッセージの内容に 1 か所の問題があります" in page
        and "1 件目のメッセージの本文: 空にできません" in page
    )
    for internal in (
        "The request body",
        "demo:reminder:1",
        "リース期限",
        "取得者",
        "重複排除キー",
        "web-1:pusher",
        "Tenant",
        '"type"',
        "Cgroup",
    ):
        assert internal not in page, internal
    assert "<title>エスカレーション（" in page
    client.force_login(superuser)
    raw = client.get(url).content.decode()
    assert "The request body has 1 error(s)" in raw and "demo:reminder:1" in raw and "web-1:pusher" in raw
    assert "重複排除キー" in raw and "リース期限" in raw


def test_it_sends_the_approval_pages_row_to_the_posts_page(as_manager, tenant, group):
    waiting = item(tenant)

    response = as_manager.get(reverse("admin:console_pushapproval_change", args=[waiting.pk]))

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:linepush_linepushitem_change", args=[waiting.pk])


def test_it_says_on_the_approval_page_that_the_escalated_task_was_delivered_since(as_manager, tenant, group):
    task = ContentTaskFactory(
        tenant=tenant, issue_key="ACME-51", summary="年始のご挨拶", status_name="automediaエラー"
    )
    escalation = item(tenant, key="escalation:acme:ACME-51:2026-12-07")
    LinePushItem.objects.filter(pk=escalation.pk).update(source_table="content_task", source_id="ACME-51")
    still = as_manager.get(reverse("admin:console_pushapproval_changelist")).content.decode()
    delivered_at = timezone.now()
    type(task).objects.filter(pk=task.pk).update(delivered_at=delivered_at, status_name="automedia実行済み")

    page = as_manager.get(reverse("admin:console_pushapproval_changelist")).content.decode()
    item_page = as_manager.get(
        reverse("admin:linepush_linepushitem_change", args=[escalation.pk])
    ).content.decode()

    assert "ACME-51 年始のご挨拶" in still and "配信済みです" not in still and "automediaエラー" in still
    for shown in (page, item_page):
        assert f"この課題は {fmt_jst(delivered_at)} に配信済みです" in shown
        assert 'data-state="delivered"' in shown

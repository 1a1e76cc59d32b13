"""Japanese by default (Django's admin and ours), English when the browser asks; times in Asia/Tokyo."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone, translation

from core.timeutil import JST
from deliveries.models import DeliveryAttempt
from line.models import LineSource
from line.settings_models import validate_triggers
from linepush.models import LinePushItem
from tests.helpers.backlog import texts
from tests.helpers.console import messages_of, mirrored_issue, task_url
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db


def test_it_speaks_japanese_by_default(as_manager):
    page = as_manager.get(reverse("admin:index")).content.decode()

    assert '<html lang="ja"' in page
    assert "automedia 管理" in page and "ダッシュボード" in page and "今日の配信予約" in page
    assert "ログアウト" in page  # Django's own admin translation


def test_it_speaks_english_when_the_browser_asks(as_manager):
    page = as_manager.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode()

    assert '<html lang="en"' in page
    assert "automedia admin" in page and "Today's scheduled deliveries" in page and "Log out" in page


def test_it_falls_back_to_japanese_for_other_languages(as_manager):
    page = as_manager.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="fr").content.decode()

    assert '<html lang="ja"' in page


def test_it_shows_times_in_tokyo(as_manager, tenant):
    ContentTaskFactory(tenant=tenant, publish_at=datetime(2026, 12, 10, 1, 0, tzinfo=UTC), summary="告知")

    page = as_manager.get(reverse("admin:deliveries_contenttask_changelist")).content.decode()

    assert "12/10 10:00" in page  # the list's short form (with the year when it is not this one's)


def page(client, name: str, *args, language: str = "en") -> str:
    return client.get(reverse(name, args=args), HTTP_ACCEPT_LANGUAGE=language).content.decode()


def push_item(tenant, **fields) -> LinePushItem:
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="Cgroup",
        trigger_type="reminder",
        payload=[{"type": "text", "text": "リマインド"}],
        dedupe_key=f"k-{fields.get('status', 'pending')}",
        scheduled_at=timezone.now(),
        **fields,
    )


# -- model, field and action names -------------------------------------------------------


def test_it_names_apps_and_models_in_english_when_the_browser_asks(as_manager):
    english = page(as_manager, "admin:index")

    for name in ("Deliveries", "Content tasks", "LINE group posts", "LINE groups", "Records"):
        assert f">{name}<" in english
    assert "コンテンツ課題" not in english and "LINE グループ投稿" not in english


def test_it_names_them_in_japanese_by_default(as_manager):
    japanese = page(as_manager, "admin:index", language="ja")

    for name in ("配信", "コンテンツ課題", "LINE グループ投稿", "LINE グループ", "記録"):
        assert f">{name}<" in japanese
    assert "Content tasks" not in japanese


def test_it_labels_a_list_its_filters_choices_and_actions_in_english(as_manager, tenant):
    push_item(tenant, status=LinePushItem.Status.WAITING_APPROVAL)

    english = page(as_manager, "admin:linepush_linepushitem_changelist")

    assert "Select LINE post to view" in english  # the queue is read-only
    assert "<span>Message</span>" in english and "Attempts</a>" in english  # column headers
    assert "By Trigger" in english and ">Waiting for approval<" in english  # filters and their choices
    assert '<td class="field-trigger_type">Reminder</td>' in english
    assert "Retry the selected failed posts (with a confirmation)" in english
    assert "Resume the selected held posts" in english
    japanese = page(as_manager, "admin:linepush_linepushitem_changelist", language="ja")
    assert (
        "投稿先グループ</a>" in japanese
        and "リマインダー" in japanese
        and "選択した失敗投稿を再実行する" in japanese
    )


def test_it_labels_a_change_form_and_its_help_in_english(client, superuser, tenant):
    client.force_login(superuser)  # the form a superuser edits: secrets write-only, with a hint
    english = page(client, "admin:core_tenant_change", tenant.pk)

    assert "Change tenant" in english
    assert "Backlog project key:</label>" in english and "e.g. https://acme.backlog.jp" in english
    assert "Current: ••••••••-key" in english  # the masked secret's help
    assert "Withdraw the approval (invalidate)" in english
    japanese = page(client, "admin:core_tenant_change", tenant.pk, language="ja")
    assert "Backlog プロジェクトキー:</label>" in japanese and "現在: ••••••••-key" in japanese


def test_it_labels_a_task_page_and_its_attempts_in_english(as_manager, tenant):
    task = ContentTaskFactory(tenant=tenant, summary="告知", approval_seq=1)
    DeliveryAttempt.objects.create(
        tenant=tenant,
        task=task,
        approval_seq=1,
        channel="line",
        endpoint="/v2/bot/message/multicast",
        outcome="sent",
    )

    english = page(as_manager, "admin:deliveries_contenttask_change", task.pk)

    assert "Approval received at:</label>" in english and "Approval number:</label>" in english
    assert "HTTP status" in english and "LINE request ID" in english  # the attempts' columns


def test_it_answers_an_admin_action_in_english(as_manager, tenant):
    held = push_item(tenant, status=LinePushItem.Status.HELD)
    form = {"action": "resume_held", "_selected_action": [held.pk]}
    url = reverse("admin:linepush_linepushitem_changelist")

    response = as_manager.post(url, form, follow=True, HTTP_ACCEPT_LANGUAGE="en")

    assert messages_of(response) == ["1 item(s) queued for sending again."]


def test_it_explains_a_bad_value_in_english():
    with translation.override("en"), pytest.raises(ValidationError) as error:
        validate_triggers(["someday"])

    assert error.value.messages == [
        "Give the triggers as a list chosen from task_approved, reminder, escalation, signal_approved, "
        "morning_digest."
    ]


# -- what goes to Backlog and LINE stays Japanese ----------------------------------------


def test_it_keeps_backlog_comments_japanese_when_a_manager_acts_in_english(
    as_manager, fake_backlog, pump, tenant, template, contacts
):
    with time_machine.travel(datetime(2026, 12, 1, 9, 0, tzinfo=JST), tick=False):
        task = mirrored_issue(fake_backlog, pump, tenant)
        response = as_manager.post(task_url("approve", task), follow=True, HTTP_ACCEPT_LANGUAGE="en")

    assert messages_of(response) == [
        f"{task.issue_key}: approved; delivery scheduled for 2026-12-10 10:00:00 (JST)."
    ]
    comments = texts(fake_backlog, task.issue_key)
    assert "管理画面で yamada さんが承認しました。" in comments[0]
    assert any("配信を予約しました: 2026-12-10 10:00:00 (JST)" in c for c in comments)


def test_it_keeps_the_reasons_a_post_is_refused_japanese(tenant):
    group = LineSource(tenant=tenant, group_id="Cgroup", allow_outbound_push=True, push_opt_in_triggers=[])
    sent = LinePushItem(tenant=tenant, ext_group_id="Cgroup", trigger_type="reminder", status="sent")

    with translation.override("en"):
        refusal, not_pending = group.refusal("reminder"), sent.may_send(group)

    assert refusal == "このグループは「リマインダー」（reminder）の自動投稿を許可していません"
    assert not_pending == "状態が「送信済み」のため送信できません"

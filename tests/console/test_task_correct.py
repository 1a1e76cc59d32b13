"""訂正を送る: the admin's correction of a delivered LINE task (a manager of its tenant, a small form)."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

from deliveries.models import ContentTask, DeliveryAttempt, DeliveryCorrection
from tests.helpers.backlog import body, status_of, texts
from tests.helpers.console import messages_of, task_url
from tests.helpers.deliveries import fire
from tests.helpers.linepush import PUSH

G1, G2 = "C" + "1" * 32, "C" + "2" * 32
TEXT = "【訂正】受付は 8:00 からです。"


@pytest.fixture
def delivered(approved, line) -> ContentTask:
    key = approved(body().replace("tag:active, !tag:opt_out", f"group:{G1} | group:{G2}"))
    assert fire(key) == "delivered"
    return ContentTask.objects.get(issue_key=key)


def corrections(line) -> list:
    return [r for r in line.sent(PUSH) if r.body["messages"][0]["text"] == TEXT]


def test_it_sends_the_correction_quoting_the_original_and_says_so_in_backlog(
    as_manager, delivered, line, fake_backlog, manager
):
    tokens = {r.body["to"]: r.response["sentMessages"][0]["quoteToken"] for r in line.sent(PUSH)}

    response = as_manager.post(task_url("correct", delivered), {"text": TEXT}, follow=True)

    assert [(r.body["to"], r.body["messages"][0]["quoteToken"]) for r in corrections(line)] == [
        (G1, tokens[G1]),
        (G2, tokens[G2]),
    ]
    assert response.redirect_chain[-1][0] == task_url("change", delivered)
    assert "訂正を送信しました: 元の配信と同じ 2 件の宛先へ。" in " ".join(messages_of(response))
    comment = texts(fake_backlog, delivered.issue_key)[-1]
    assert comment.startswith(
        "[automedia] 管理画面で yamada さんが訂正を送信しました: 元の配信と同じ 2 件の宛先へ。"
    )
    assert comment.endswith(f"訂正文:\n> {TEXT}")
    assert status_of(fake_backlog, delivered.issue_key) == "automedia実行済み"
    assert DeliveryAttempt.objects.filter(correction__isnull=False).count() == 2
    assert LogEntry.objects.get(object_id=str(delivered.pk)).user == manager


def test_the_same_correction_submitted_twice_is_sent_once(as_manager, delivered, line):
    as_manager.post(task_url("correct", delivered), {"text": TEXT})
    again = as_manager.post(task_url("correct", delivered), {"text": TEXT})

    assert len(corrections(line)) == 2
    assert "送信済みです（もう一度は送りません）" in again.content.decode()


def test_the_form_asks_for_a_text_and_sends_nothing_without_one(as_manager, delivered, line):
    page = as_manager.get(task_url("correct", delivered)).content.decode()
    empty = as_manager.post(task_url("correct", delivered), {"text": "  "})

    assert 'id="correct-form"' in page and "元の配信と同じ宛先に送ります" in page
    assert empty.status_code == 200 and empty.context["form"].errors["text"]
    assert corrections(line) == [] and not DeliveryCorrection.objects.exists()


def test_it_refuses_a_task_not_delivered_on_line(as_manager, approved, line):
    task = ContentTask.objects.get(issue_key=approved())

    response = as_manager.post(task_url("correct", task), {"text": TEXT})

    assert "LINE で配信済みの課題ではないため、訂正を送れません" in response.content.decode()
    assert corrections(line) == []
    assert 'id="task-correct"' not in as_manager.get(task_url("change", task)).content.decode()


def test_only_a_manager_of_the_tenant_may_send(client, delivered, line, viewer, other_manager, as_manager):
    shown = 'id="task-correct"' in as_manager.get(task_url("change", delivered)).content.decode()
    client.force_login(viewer)
    as_viewer = client.post(task_url("correct", delivered), {"text": TEXT})
    client.force_login(other_manager)
    as_other = client.post(task_url("correct", delivered), {"text": TEXT})

    assert shown
    assert (as_viewer.status_code, as_other.status_code) == (403, 404)
    assert corrections(line) == []

"""Comment commands through the webhook, with the fake Backlog and the fake LINE."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

import pytest
import time_machine

from backlog_bridge.events import event_process
from backlog_bridge.models import AIReview, BacklogEvent, CommandRun
from core.intake import CLAIMED_ELSEWHERE
from core.timeutil import JST
from deliveries.models import DeliverySchedule, MessageTemplate
from sandbox.anthropic import AnthropicReply, FakeAnthropic
from sandbox.backlog import BOT, HUMAN
from tests.helpers.backlog import STRANGER, body, reply_to, texts, webhook_url
from tests.helpers.deliveries import MULTICAST, fire

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)


@pytest.fixture
def say(fake_backlog, pump, tenant):
    """Post a comment as a user and deliver the resulting webhooks."""
    return functools.partial(reply_to, fake_backlog, pump, tenant, at=NOW)


def schedule_of(key: str) -> DeliverySchedule | None:
    return DeliverySchedule.objects.filter(task__issue_key=key).first()


def test_it_answers_status(approved, say):
    key = approved()

    reply = say(key, "/automedia status")

    assert reply.startswith("[automedia] 状態（/automedia status）")
    assert (
        "automedia承認" in reply
        and "2026-12-10 10:00:00 (JST)" in reply
        and "自動配信実行日時: なし" in reply
    )


def test_it_cancels_a_schedule_and_moves_the_status_back(approved, say, fake_backlog):
    key = approved()

    reply = say(key, "/automedia cancel")

    assert schedule_of(key) is None
    assert fake_backlog.issue(key)["status"]["name"] == "処理中"
    assert "取り消し" in reply and "処理中" in reply


def test_it_says_when_there_is_nothing_to_cancel(fake_backlog, say, tenant, pump):
    key = fake_backlog.create_issue("ACME", summary="未承認", description="")["issueKey"]

    assert "取り消す配信予約はありません" in say(key, "/automedia cancel")


def test_it_sends_now_through_the_scheduler_with_the_overrides(approved, say, line, fake_backlog):
    MessageTemplate.objects.create(
        name="flash", rev="f1", messages=[{"type": "text", "text": "速報 {{ date }}"}]
    )
    key = approved()

    reply = say(key, "/automedia send template=flash audience=tag:active")

    schedule = schedule_of(key)
    assert schedule.reason == "command"
    assert abs((schedule.due_at - NOW).total_seconds() - 5) < 2
    assert "受け付けました" in reply and "flash" in reply
    assert fire(key) == "delivered"
    [sent] = line.sent(MULTICAST)
    assert sent.body["messages"] == [{"type": "text", "text": "速報 2026-12-10"}]
    assert len(sent.body["to"]) == 4  # tag:active includes the opt_out contact; blocked ones never
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"


def test_it_sends_an_issue_that_was_not_approved_yet(
    fake_backlog, say, template, contacts, line, pump, tenant
):
    key = fake_backlog.create_issue("ACME", summary="即時", description=body(), status="処理中")["issueKey"]

    reply = say(key, "/automedia send template=announce_open")

    assert "受け付けました" in reply
    assert fake_backlog.issue(key)["status"]["name"] == "automedia承認"
    assert schedule_of(key).reason == "command"  # our own status change did not replace it
    assert fire(key) == "delivered"


def test_it_refuses_a_send_when_the_project_has_no_approved_status(fake_backlog, say, template, contacts):
    key = fake_backlog.create_issue("ACME", summary="即時", description=body(), status="処理中")["issueKey"]
    project = fake_backlog._projects["ACME"]  # a project whose manager deleted automedia承認
    project.statuses[:] = [status for status in project.statuses if status["name"] != "automedia承認"]

    reply = say(key, "/automedia send template=announce_open")

    assert "送信できません" in reply and "状態「automedia承認」がありません" in reply
    assert schedule_of(key) is None
    assert fake_backlog.issue(key)["status"]["name"] == "処理中"


def test_it_refuses_a_send_with_an_unknown_template(approved, say):
    key = approved()
    before = schedule_of(key).due_at

    reply = say(key, "/automedia send template=nothing@r9")

    assert reply.startswith("[automedia] 送信できません") and "nothing@r9" in reply
    assert schedule_of(key).due_at == before


def test_it_previews_exactly_what_will_be_sent(approved, say, settings):
    settings.ANTHROPIC_API_KEY = ""
    key = approved()

    reply = say(key, "/automedia preview")

    assert reply.startswith("[automedia] プレビュー")
    assert "2026-12-10 の営業時間は 7:00-18:00 です" in reply
    assert "配信先: 3 件" in reply and "2026-12-10 10:00:00 (JST)（予約済み）" in reply
    assert "静粛時間帯: 対象外" in reply and "問題: なし" in reply
    assert '"type": "text"' in reply
    assert "AI レビュー" not in reply


def test_it_previews_the_problems_of_a_broken_issue(fake_backlog, say, tenant, template):
    key = fake_backlog.create_issue("ACME", summary="壊れ", description="## 配信メタ\n- チャネル: LINE\n")[
        "issueKey"
    ]

    reply = say(key, "/automedia preview")

    assert "投稿日時" in reply and "テンプレ" in reply


@pytest.fixture
def anthropic_api(settings):
    with FakeAnthropic() as fake:
        settings.ANTHROPIC_API_KEY = "test-anthropic-key"
        settings.ANTHROPIC_BASE_URL = fake.base_url
        settings.AI_REVIEW_TIMEOUT_SECONDS = 0.5
        yield fake


def test_it_adds_an_advisory_ai_review_and_records_its_cost(approved, say, anthropic_api):
    anthropic_api.reply = AnthropicReply(
        text="- 特になし（トーンは丁寧です）", input_tokens=321, output_tokens=17
    )
    key = approved()

    reply = say(key, "/automedia preview")

    assert "AI レビュー（参考情報・自動生成です" in reply and "特になし" in reply
    assert "入力 321 / 出力 17 トークン" in reply
    review = AIReview.objects.get()
    assert (review.ok, review.input_tokens, review.output_tokens, review.model) == (
        True,
        321,
        17,
        "claude-sonnet-5",
    )
    [request] = anthropic_api.requests
    assert request.path == "/v1/messages"
    assert "test-anthropic-key" in (request.headers.get("x-api-key") or request.headers["authorization"])
    assert request.body["model"] == "claude-sonnet-5"
    assert "2026-12-10 の営業時間" in request.body["messages"][0]["content"]


@pytest.mark.parametrize(
    "failure",
    # An answer held back far past AI_REVIEW_TIMEOUT_SECONDS (released when the test ends).
    [AnthropicReply(delay=60.0), AnthropicReply(status=500), AnthropicReply(status=529)],
)
def test_a_failing_ai_review_never_fails_the_preview(approved, say, anthropic_api, failure):
    anthropic_api.reply = failure
    key = approved()

    reply = say(key, "/automedia preview")

    # The preview did not wait for a held answer, and a refusal was asked once: no retries.
    assert len(anthropic_api.requests) == 1
    assert anthropic_api.answered == (0 if failure.delay else 1)
    anthropic_api.release_held()
    assert reply.startswith("[automedia] プレビュー") and "配信先: 3 件" in reply
    assert "AI レビューは取得できませんでした" in reply
    assert AIReview.objects.get().ok is False


def test_it_tells_someone_who_is_not_an_operator_they_may_not(approved, say):
    key = approved()

    reply = say(key, "/automedia cancel", user=STRANGER)

    assert "権限がありません" in reply and "外部 ゲスト" in reply
    assert schedule_of(key) is not None


def test_it_answers_usage_for_an_unknown_command(approved, say):
    key = approved()

    reply = say(key, "/automedia publish now")

    assert "知らないコマンド" in reply and "使い方" in reply


def test_its_own_comments_never_run_commands(approved, say, fake_backlog):
    key = approved()
    before = len(texts(fake_backlog, key))

    say(key, "/automedia cancel", user=BOT)

    assert schedule_of(key) is not None
    assert len(texts(fake_backlog, key)) == before + 1  # only the comment itself


def test_a_quoted_command_does_not_run_again(approved, say, fake_backlog):
    key = approved()
    before = len(texts(fake_backlog, key))

    say(key, "> /automedia cancel\n了解です")

    assert schedule_of(key) is not None
    assert len(texts(fake_backlog, key)) == before + 1


def test_a_comment_processed_twice_runs_its_command_once(approved, fake_backlog, tenant, client):
    from backlog_bridge.events import event_process
    from backlog_bridge.models import BacklogEvent

    key = approved()
    fake_backlog.add_comment(key, "/automedia status")
    activity = fake_backlog.outbox.pop()
    with time_machine.travel(NOW, tick=True):
        for activity_id in (activity["id"], activity["id"] + 1000):  # e.g. webhook + catch-up copy
            event = BacklogEvent.objects.create(
                tenant=tenant,
                activity_id=activity_id,
                type=3,
                issue_key=key,
                payload={**activity, "id": activity_id},
            )
            event_process(event_id=event.pk)

    assert sum(t.startswith("[automedia] 状態") for t in texts(fake_backlog, key)) == 1
    assert CommandRun.objects.count() == 1


def test_a_send_can_be_followed_by_status_in_one_comment(approved, say):
    MessageTemplate.objects.create(name="flash", rev="f1", messages=[{"type": "text", "text": "速報"}])
    key = approved()

    reply = say(key, "/automedia send template=flash\n/automedia status")

    assert "受け付けました" in reply and "状態（/automedia status）" in reply
    assert (schedule_of(key).due_at - timedelta(seconds=5)) <= NOW + timedelta(seconds=2)


@pytest.fixture
def forge(fake_backlog, pump, tenant, client):
    """Post a real comment, then deliver its webhook with the body changed (the webhook is
    unsigned: anyone holding the URL can send any text and author)."""

    def comment(key: str, text: str, *, user: dict, change) -> BacklogEvent:
        with time_machine.travel(NOW, tick=True):
            fake_backlog.add_comment(key, text, user=user)
            payload = fake_backlog.outbox.pop()
            change(payload)
            client.post(webhook_url(tenant), data=payload, content_type="application/json")
            pump(tenant)
        return BacklogEvent.objects.get(activity_id=payload["id"])

    return comment


def test_it_takes_the_author_from_backlog_not_from_the_webhook(approved, forge, fake_backlog):
    key = approved()

    forge(key, "/automedia cancel", user=STRANGER, change=lambda p: p.update(createdUser=HUMAN))

    assert schedule_of(key) is not None
    assert (
        "外部 ゲスト さんには automedia のコマンドを実行する権限がありません" in texts(fake_backlog, key)[-1]
    )
    assert not CommandRun.objects.exists()


def test_it_takes_the_text_from_backlog_not_from_the_webhook(approved, forge, fake_backlog):
    key = approved()

    event = forge(
        key,
        "了解です",
        user=HUMAN,
        change=lambda p: p["content"]["comment"].update(content="/automedia cancel"),
    )

    assert schedule_of(key) is not None
    assert texts(fake_backlog, key)[-1] == "了解です"  # no reply: there was no command
    assert event.detail == "comment stored"


def test_it_runs_what_backlog_has_when_the_webhook_says_less(approved, forge, fake_backlog):
    key = approved()

    forge(key, "/automedia cancel", user=HUMAN, change=lambda p: p["content"]["comment"].update(content="ok"))

    assert schedule_of(key) is None
    assert CommandRun.objects.get().user == {"id": 1001, "userId": "manager", "name": "山田 マネージャー"}


def test_it_ignores_a_comment_that_backlog_does_not_have(approved, forge, fake_backlog):
    key = approved()
    before = len(texts(fake_backlog, key))

    event = forge(
        key, "/automedia cancel", user=HUMAN, change=lambda p: p["content"]["comment"].update(id=987654)
    )

    assert (event.outcome, event.detail) == ("ignored", f"comment 987654 not found on {key}")
    assert schedule_of(key) is not None
    assert len(texts(fake_backlog, key)) == before + 1  # the comment itself, no reply
    assert not CommandRun.objects.exists()


def test_it_retries_the_comment_read_after_a_transient_error(approved, fake_backlog, tenant, pump):
    key = approved()
    fake_backlog.fail_next(503, method="GET", path_prefix=f"/api/v2/issues/{key}/comments/")

    with time_machine.travel(NOW, tick=True):
        fake_backlog.add_comment(key, "/automedia cancel")
        activity_id = fake_backlog.outbox[-1]["id"]
        pump(tenant)
        event = BacklogEvent.objects.get(activity_id=activity_id)
        assert (event.outcome, schedule_of(key) is not None) == ("failed", True)
        assert event_process(event_id=event.pk) == CLAIMED_ELSEWHERE  # not before its retry time
    with time_machine.travel(NOW + timedelta(seconds=11), tick=True):
        assert event_process(event_id=event.pk) == "done"  # its retry, on the ladder

    assert schedule_of(key) is None


def test_it_no_longer_takes_a_display_name_for_an_operator(approved, say, tenant):
    tenant.operators = [HUMAN["name"]]
    tenant.save()
    key = approved()

    reply = say(key, "/automedia cancel")

    assert "権限がありません" in reply
    assert schedule_of(key) is not None


@pytest.mark.parametrize("operator", ["id:1001", "user:manager"])
def test_it_takes_the_numeric_id_or_the_user_id_for_an_operator(approved, say, tenant, operator):
    tenant.operators = [operator]
    tenant.save()
    key = approved()

    say(key, "/automedia cancel")

    assert schedule_of(key) is None

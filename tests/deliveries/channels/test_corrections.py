"""`/automedia correct`: a correction to exactly the recipients of a delivered LINE message,
quoting the original where LINE allows it, sent once; refusals. Through the webhook, the fake
Backlog and the fake LINE."""

from __future__ import annotations

import functools
from datetime import datetime

import pytest

from core.timeutil import JST
from deliveries.channels.line.correction import chunk_retry_key
from deliveries.models import ContentTask, DeliveryAttempt, DeliveryCorrection
from tests.helpers.backlog import STRANGER, body, reply_to
from tests.helpers.channels import channel_body
from tests.helpers.deliveries import MULTICAST, fire
from tests.helpers.linepush import PUSH

AFTER = datetime(2026, 12, 10, 11, 0, tzinfo=JST)
G1, G2 = "C" + "1" * 32, "C" + "2" * 32
CORRECTION = "【訂正】営業時間は 8:00-18:00 の誤りでした。"


@pytest.fixture
def say(fake_backlog, pump, tenant):
    return functools.partial(reply_to, fake_backlog, pump, tenant, at=AFTER)


@pytest.fixture
def delivered_to_groups(approved, line):
    key = approved(body().replace("tag:active, !tag:opt_out", f"group:{G1} | group:{G2}"))
    assert fire(key) == "delivered"
    return key


def correct(text: str = CORRECTION) -> str:
    return f"/automedia correct\n## 訂正\n{text}\n"


def corrections_sent(line, path: str = PUSH) -> list:
    return [r for r in line.sent(path) if r.body["messages"][0]["text"] == CORRECTION]


def test_it_stores_the_quote_token_of_each_message_sent(delivered_to_groups, line):
    answers = {r.body["to"]: r.response["sentMessages"] for r in line.sent(PUSH)}

    attempts = DeliveryAttempt.objects.filter(task__issue_key=delivered_to_groups).order_by("chunk")

    assert [(a.request_summary["to"], a.sent_messages) for a in attempts] == [
        ([G1], answers[G1]),
        ([G2], answers[G2]),
    ]
    assert all(m["quoteToken"] for a in attempts for m in a.sent_messages)


def test_it_sends_the_correction_to_each_group_quoting_the_original(
    delivered_to_groups, line, say, fake_backlog
):
    key = delivered_to_groups
    originals = {r.body["to"]: r.response["sentMessages"][0]["quoteToken"] for r in line.sent(PUSH)}

    reply = say(key, correct())

    sent = corrections_sent(line)
    assert [(r.body["to"], r.body["messages"]) for r in sent] == [
        (G1, [{"type": "text", "text": CORRECTION, "quoteToken": originals[G1]}]),
        (G2, [{"type": "text", "text": CORRECTION, "quoteToken": originals[G2]}]),
    ]
    correction = DeliveryCorrection.objects.get()
    assert [r.headers["x-line-retry-key"] for r in sent] == [chunk_retry_key(correction, n) for n in (0, 1)]
    assert reply.startswith(
        "[automedia] /automedia correct（山田 マネージャー）: 訂正を送信しました: 元の配信と同じ 2 件の宛先へ。"
    )
    assert "個別送信（push）2 件のうち 2 件は元のメッセージを引用しています。" in reply
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"
    attempts = DeliveryAttempt.objects.filter(correction=correction).order_by("chunk")
    assert [(a.endpoint, a.outcome, a.request_summary["quoted"]) for a in attempts] == [
        ("/v2/bot/message/push", "sent", True),
        ("/v2/bot/message/push", "sent", True),
    ]
    assert (correction.recipients, correction.requested_by) == (2, "山田 マネージャー")


def test_the_same_correction_again_sends_nothing(delivered_to_groups, line, say):
    say(delivered_to_groups, correct())

    reply = say(delivered_to_groups, "もう一度\n" + correct())

    assert len(corrections_sent(line)) == 2
    assert "この訂正は" in reply and "送信済みです（もう一度は送りません）" in reply
    assert DeliveryAttempt.objects.filter(correction__isnull=False).count() == 2


def test_a_correction_interrupted_by_line_resumes_without_posting_twice(delivered_to_groups, line, say):
    line.fail_next(500, path_prefix=PUSH)
    first = say(delivered_to_groups, correct())

    second = say(delivered_to_groups, "再送\n" + correct())

    assert "訂正の送信に失敗しました（0 / 2 件の宛先に送信済み）" in first
    assert [r.body["to"] for r in corrections_sent(line)] == [G1, G2]
    assert second.endswith(
        "元の配信と同じ 2 件の宛先へ。\n- 個別送信（push）2 件のうち 2 件は元のメッセージを引用しています。"
    )


def test_a_multicast_is_corrected_to_the_same_users_without_a_quote(approved, line, say, contacts):
    key = approved()
    assert fire(key) == "delivered"
    [original] = line.sent(MULTICAST)

    reply = say(key, correct())

    [sent] = corrections_sent(line, MULTICAST)
    assert sent.body == {"to": original.body["to"], "messages": [{"type": "text", "text": CORRECTION}]}
    assert "元の配信と同じ 3 件の宛先へ" in reply
    assert "一斉送信（multicast）の 3 人には引用なしで送りました" in reply


def test_it_explains_an_empty_or_missing_correction_and_sends_nothing(delivered_to_groups, line, say):
    missing = say(delivered_to_groups, "/automedia correct")
    empty = say(delivered_to_groups, "/automedia correct\n## 訂正\n\n## メモ\n別の話")

    for reply in (missing, empty):
        assert "訂正文がありません。コメントに「## 訂正」の見出しを書き" in reply
    assert corrections_sent(line) == [] and not DeliveryCorrection.objects.exists()


def test_it_refuses_a_task_not_delivered(approved, line, say):
    key = approved()

    reply = say(key, correct())

    assert "LINE で配信済みの課題ではないため、訂正を送れません" in reply
    assert line.sent(PUSH) == [] and line.sent(MULTICAST) == []


def test_it_refuses_someone_who_is_not_an_operator(delivered_to_groups, line, say):
    reply = say(delivered_to_groups, correct(), user=STRANGER)

    assert reply == "[automedia] 外部 ゲスト さんには automedia のコマンドを実行する権限がありません。"
    assert corrections_sent(line) == []


@pytest.mark.parametrize(
    ("channel", "answer"),
    [
        ("instagram", "Instagram の投稿は API では取り下げ・訂正できません。Instagram アプリで"),
        ("tiktok", "TikTok の投稿は API では取り下げ・訂正できません。TikTok アプリで"),
        ("hubspot", "送信済みの HubSpot メールは取り消せません（API でもアプリでも）。"),
    ],
)
def test_it_says_what_can_be_done_on_another_platform(fake_backlog, tenant, say, line, channel, answer):
    description = channel_body(channel)
    key = fake_backlog.create_issue(
        "ACME", summary="告知", description=description, status="automedia実行済み"
    )["issueKey"]
    ContentTask.objects.create(tenant=tenant, issue_key=key, channel=channel, delivered_at=AFTER)

    reply = say(key, correct())

    assert answer in reply
    assert "の投稿には訂正を送れません" in reply
    assert line.sent(PUSH) == []


def test_a_send_whose_answer_was_lost_keeps_the_quote_token_of_the_409(approved, line, say):
    key = approved(body().replace("tag:active, !tag:opt_out", f"group:{G1}"))
    line.fail_next(500, path_prefix=PUSH, then_accept=True)  # sent, but the answer is lost
    assert fire(key).startswith("retry in")
    assert fire(key) == "delivered"  # the resend is answered 409 with the original sentMessages
    [accepted] = DeliveryAttempt.objects.filter(task__issue_key=key, outcome="duplicate")
    [token] = [m["quoteToken"] for m in accepted.sent_messages]

    say(key, correct())

    [sent] = corrections_sent(line)  # the fake accepts only a quoteToken it issued
    assert sent.body["messages"][0]["quoteToken"] == token

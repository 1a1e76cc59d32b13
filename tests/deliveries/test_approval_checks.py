"""Approval-time checks (deliveries/approve/checks.py): LINE's validate endpoint, the quota
forecast and the platform rules, on every way in (webhook approval, `/automedia send`,
preview). LINE is mocked with respx (the exact requests are asserted); Backlog is the fake
on loopback, which respx lets through."""

from __future__ import annotations

import json
from datetime import datetime

import httpx
import pytest
import respx
import time_machine

from core.timeutil import JST
from deliveries.models import STATUS_ERROR, ContentTask, DeliverySchedule, MessageTemplate
from line.models import LinePlan, LinePushSettings
from tests.helpers.backlog import approve, body, reply_to, status_of, texts
from tests.helpers.channels import channel_body, channel_template

pytestmark = pytest.mark.usefixtures("httpx_engine")  # respx sees only httpx

LINE = "https://api.line.test"
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
GROUP = "C" + "4" * 32
RENDERED = [{"type": "text", "text": "2026-12-10 の営業時間は 7:00-18:00 です"}]
REJECTED = {
    "message": "The request body has 1 error(s)",
    "details": [{"message": "Length must be between 0 and 5000", "property": "messages[0].text"}],
}


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def line_api(settings):
    """LINE answering: validate OK, no target limit, 182 messages used this month."""
    settings.LINE_API_BASE_URL = LINE
    with respx.mock(assert_all_called=False) as router:
        router.route(host="127.0.0.1").pass_through()  # the fake Backlog
        router.post(url__regex=rf"^{LINE}/v2/bot/message/validate/", name="validate").respond(200, json={})
        router.get(f"{LINE}/v2/bot/message/quota").respond(200, json={"type": "none"})
        router.get(f"{LINE}/v2/bot/message/quota/consumption").respond(200, json={"totalUsage": 182})
        yield router


@pytest.fixture
def issue(fake_backlog, template, contacts):
    """A LINE issue in 処理中 for the 3 contacts tagged active and not opt_out."""

    def make(description: str = body()) -> str:
        return fake_backlog.create_issue(
            "ACME", summary="年末告知", description=description, status="処理中"
        )["issueKey"]

    return make


def on_plan(tenant, code: str) -> None:
    LinePushSettings.objects.update_or_create(
        tenant=tenant, defaults={"plan": LinePlan.objects.get(code=code)}
    )


def validate_calls(router) -> list[httpx.Request]:
    return [c.request for c in router.calls if "/message/validate/" in c.request.url.path]


def scheduled(key: str) -> bool:
    return DeliverySchedule.objects.filter(task__issue_key=key).exists()


# -- LINE's validate endpoint ----------------------------------------------------------------


def test_it_asks_line_to_validate_the_rendered_messages_and_says_so(
    fake_backlog, tenant, pump, issue, line_api
):
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    [request] = validate_calls(line_api)
    assert request.url == f"{LINE}/v2/bot/message/validate/multicast"
    assert request.headers["Authorization"] == "Bearer line-channel-token"
    assert json.loads(request.content) == {"messages": RENDERED}
    assert scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert "配信を予約しました" in comment
    assert "確認: LINE 検証: OK / クォータ見込み: 3 通（今月 182 / 上限なし）" in comment
    checks = ContentTask.objects.get(issue_key=key).approval_checks
    assert checks["line_messages"] == 3 and checks["problems"] == []


def test_a_400_from_line_refuses_the_approval_naming_each_property(
    fake_backlog, tenant, pump, issue, line_api
):
    line_api.routes["validate"].respond(400, json=REJECTED)
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert not scheduled(key)
    assert status_of(fake_backlog, key) == "automediaエラー"
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith("[automedia] 承認時の確認で問題が見つかったため配信を予約できません。")
    assert (
        "- LINE がメッセージを受け付けません（validate/multicast）: messages[0].text: Length must be between 0 and 5000"
        in comment
    )
    assert "LINE 検証: NG" in comment


@pytest.mark.parametrize(
    "failure",
    [httpx.Response(500, json={"message": "Internal server error"}), httpx.ReadTimeout("timed out")],
    ids=["5xx", "timeout"],
)
def test_line_that_cannot_be_asked_never_blocks_the_approval(
    fake_backlog, tenant, pump, issue, line_api, failure
):
    line_api.routes["validate"].mock(side_effect=[failure])
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert scheduled(key)
    assert status_of(fake_backlog, key) == "automedia承認"
    comment = texts(fake_backlog, key)[-1]
    assert "配信を予約しました" in comment
    assert "LINE 検証: LINE に確認できませんでした" in comment and "承認は受け付けます" in comment


def test_a_group_target_is_validated_as_a_push_and_counted_per_member(
    fake_backlog, tenant, pump, issue, line_api
):
    line_api.get(f"{LINE}/v2/bot/group/{GROUP}/members/count").respond(200, json={"count": 41})
    key = issue(body().replace("tag:active, !tag:opt_out", f"group:{GROUP}"))

    approve(fake_backlog, pump, tenant, key)

    [request] = validate_calls(line_api)
    assert request.url.path == "/v2/bot/message/validate/push"
    assert "クォータ見込み: 41 通（今月 182 / 上限なし）" in texts(fake_backlog, key)[-1]


# -- the quota forecast ------------------------------------------------------------------------


def test_it_refuses_a_send_over_a_plan_without_extra_messages(fake_backlog, tenant, pump, issue, line_api):
    on_plan(tenant, "light")
    line_api.get(f"{LINE}/v2/bot/message/quota/consumption").respond(200, json={"totalUsage": 4998})
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert not scheduled(key)
    assert status_of(fake_backlog, key) == "automediaエラー"
    comment = texts(fake_backlog, key)[-1]
    assert (
        "ライトプランの月間メッセージ数 5,000 通を超えます: この配信 3 通 + 今月の使用 4,998 通"
        "（LINE の集計 4,998、予約済みで未送信 0）= 5,001 通。ライトプランでは追加メッセージを送れません"
    ) in comment
    assert "LINE 検証: OK" in comment


def test_it_schedules_over_a_standard_plan_and_states_the_overage_and_its_cost(
    fake_backlog, tenant, pump, issue, line_api
):
    on_plan(tenant, "standard")
    line_api.get(f"{LINE}/v2/bot/message/quota/consumption").respond(200, json={"totalUsage": 29_999})
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert scheduled(key)
    assert (
        "クォータ見込み: 3 通（今月 29,999 / 30,000） 超過見込み 2 通、追加料金 最大 ¥6"
        "（スタンダードプラン: 追加メッセージ 1 通あたり最大 ¥3）"
    ) in texts(fake_backlog, key)[-1]


def test_lines_own_target_limit_refuses_even_on_a_plan_with_extra_messages(
    fake_backlog, tenant, pump, issue, line_api
):
    on_plan(tenant, "standard")
    line_api.get(f"{LINE}/v2/bot/message/quota").respond(200, json={"type": "limited", "value": 184})
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert not scheduled(key)
    assert "LINE の今月の送信上限 184 通を超えます" in texts(fake_backlog, key)[-1]


def test_it_counts_what_is_scheduled_and_not_sent_in_the_month(fake_backlog, tenant, pump, issue, line_api):
    first, second = issue(), issue()
    approve(fake_backlog, pump, tenant, first)

    approve(fake_backlog, pump, tenant, second)

    # LINE still says 182: the first delivery's 3 messages are automedia's, not sent yet.
    assert (
        "クォータ見込み: 3 通（今月 182 / 上限なし、予約済みで未送信 3 通）"
        in texts(fake_backlog, second)[-1]
    )


def test_without_a_plan_the_approval_counts_against_lines_own_limit_and_says_so(
    fake_backlog, tenant, pump, issue, line_api
):
    # No plan is assumed: past the free plan's 200 messages LINE still allows 5,000.
    LinePlan.objects.all().delete()
    line_api.get(f"{LINE}/v2/bot/message/quota").respond(200, json={"type": "limited", "value": 5000})
    line_api.get(f"{LINE}/v2/bot/message/quota/consumption").respond(200, json={"totalUsage": 1200})
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert scheduled(key)
    assert (
        "クォータ見込み: 3 通（今月 1,200 / LINE の上限 5,000）（プラン未設定のため LINE の上限 5,000 通で判定）"
        in texts(fake_backlog, key)[-1]
    )


def test_without_a_plan_hundreds_of_group_approvals_within_lines_limit_are_all_scheduled(
    fake_backlog, tenant, pump, issue, line_api
):
    # 300 pushes to a group of 5 members: 1,500 messages, far past the free plan's 200 and
    # within the 5,000 LINE states. Nothing is refused on a plan nobody set.
    line_api.get(f"{LINE}/v2/bot/message/quota").respond(200, json={"type": "limited", "value": 5000})
    line_api.get(f"{LINE}/v2/bot/group/{GROUP}/members/count").respond(200, json={"count": 5})
    keys = [issue(body().replace("tag:active, !tag:opt_out", f"group:{GROUP}")) for _ in range(300)]

    for key in keys:
        fake_backlog.update_issue(key, status="automedia承認")
    pump(tenant)

    refused = [k for k in keys if not scheduled(k)]
    assert (len(keys) - len(refused), refused) == (300, [])
    assert {status_of(fake_backlog, k) for k in keys}.isdisjoint({STATUS_ERROR})
    assert (
        "クォータ見込み: 5 通（今月 182 / LINE の上限 5,000、予約済みで未送信 1,495 通）"
        "（プラン未設定のため LINE の上限 5,000 通で判定）" in texts(fake_backlog, keys[-1])[-1]
    )


# -- platform rules ----------------------------------------------------------------------------


def test_an_instagram_caption_over_the_hashtag_limit_refuses_the_approval(fake_backlog, tenant, pump):
    tags = " ".join(f"#tag{n}" for n in range(31))
    channel_template(
        "instagram", {"type": "image", "caption": tags, "image_url": "https://cdn.example.jp/a.jpg"}
    )
    key = fake_backlog.create_issue(
        "ACME", summary="新作", description=channel_body("instagram"), status="処理中"
    )["issueKey"]

    approve(fake_backlog, pump, tenant, key)

    assert not scheduled(key)
    assert status_of(fake_backlog, key) == "automediaエラー"
    comment = texts(fake_backlog, key)[-1]
    assert "- Instagram の投稿ルール: caption のハッシュタグが多すぎます（31 個、上限 30 個）。" in comment


def test_a_valid_platform_post_is_scheduled_with_its_rules_checked(fake_backlog, tenant, pump):
    channel_template("tiktok")
    key = fake_backlog.create_issue(
        "ACME", summary="新作", description=channel_body("tiktok"), status="処理中"
    )["issueKey"]

    approve(fake_backlog, pump, tenant, key)

    assert scheduled(key)
    assert "確認: TikTok の投稿ルール: OK" in texts(fake_backlog, key)[-1]


# -- the other ways in: /automedia send, the preview ----------------------------------------------


def test_automedia_send_runs_the_same_checks(fake_backlog, tenant, pump, issue, line_api):
    line_api.routes["validate"].respond(400, json=REJECTED)
    key = issue()

    reply = reply_to(fake_backlog, pump, tenant, key, "/automedia send template=announce_open@r1")

    assert reply.startswith("[automedia] 送信できません:")
    assert "messages[0].text: Length must be between 0 and 5000" in reply
    assert not scheduled(key)


def test_the_preview_shows_the_validation_and_the_forecast(fake_backlog, tenant, pump, issue, line_api):
    on_plan(tenant, "light")
    key = issue()

    reply = reply_to(fake_backlog, pump, tenant, key, "/automedia preview")

    assert "- 承認時の確認: LINE 検証: OK / クォータ見込み: 3 通（今月 182 / 5,000）" in reply
    assert len(validate_calls(line_api)) == 1
    assert not scheduled(key)


def test_the_preview_lists_lines_reasons_as_problems(fake_backlog, tenant, pump, issue, line_api):
    line_api.routes["validate"].respond(400, json=REJECTED)
    key = issue()

    reply = reply_to(fake_backlog, pump, tenant, key, "/automedia preview")

    assert "  - LINE がメッセージを受け付けません（validate/multicast）: messages[0].text" in reply


# -- through the fake LINE of the sandbox (as `make run` does it) ----------------------------------


def test_the_fake_line_refuses_what_the_spec_refuses_and_the_approval_says_so(
    fake_backlog, tenant, pump, contacts, line
):
    sticker = {"type": "sticker", "packageId": 446, "stickerId": "1988"}  # the spec wants strings
    MessageTemplate.objects.create(name="announce_open", rev="r1", messages=[sticker])
    key = fake_backlog.create_issue("ACME", summary="スタンプ", description=body(), status="処理中")[
        "issueKey"
    ]

    approve(fake_backlog, pump, tenant, key)

    assert not scheduled(key), texts(fake_backlog, key)
    assert "messages[0].packageId: Must be a string" in texts(fake_backlog, key)[-1]
    assert line.sent() == []


def test_the_fake_lines_outage_and_quota_through_an_approval(fake_backlog, tenant, pump, issue, line):
    line.set_quota(type="limited", value=5000, total_usage=4000)
    line.fail_next(503, path_prefix="/v2/bot/message/validate")
    on_plan(tenant, "light")
    key = issue()

    approve(fake_backlog, pump, tenant, key)

    assert scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert "LINE 検証: LINE に確認できませんでした（サーバーエラー（503）" in comment
    assert "クォータ見込み: 3 通（今月 4,000 / 5,000）" in comment

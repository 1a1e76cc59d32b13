"""LINE narrowcast for a large tag (deliveries/channels/line/narrowcast.py).

Each step against respx (the exact requests asserted): the audience uploaded, read until
READY, the narrowcast with the approval's retry key (and `limit` when the quota is tight),
its progress polled to the end. Then the whole delivery against the fake LINE and the fake
Backlog: one narrowcast, its counts in the write-back comment."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import httpx
import pytest
import respx

from core.timeutil import JST
from core.transport import TransportError
from deliveries.channels.line.publisher import narrowcast_key, publish
from deliveries.channels.models import ChannelPost
from deliveries.channels.publisher_base import Context, Done, PublishFailed, Wait
from deliveries.models import DeliveryAttempt
from deliveries.writeback.outcome_comments import success_comment
from line.models import LineContact
from tests.helpers.backlog import texts
from tests.helpers.deliveries import fire
from tests.helpers.factories import ContentTaskFactory, LineContactFactory, TenantFactory

LINE = "https://api.line.test"
AUDIENCE = 1234567890123
NOW = datetime(2026, 12, 10, 10, 0, tzinfo=JST)
TEXT = [{"type": "text", "text": "年末のお知らせ"}]
READY = {
    "audienceGroup": {"audienceGroupId": AUDIENCE, "status": "READY"},
    "jobs": [{"jobStatus": "FINISHED"}],
}
IN_PROGRESS = {"audienceGroup": {"audienceGroupId": AUDIENCE, "status": "IN_PROGRESS"}, "jobs": []}
ACCEPTED = "2026-12-10T01:00:00.000Z"
SUCCEEDED = {
    "phase": "succeeded",
    "successCount": 58,
    "failureCount": 2,
    "targetCount": 60,
    "acceptedTime": ACCEPTED,
    "completedTime": "2026-12-10T01:02:00.000Z",
}


@pytest.fixture
def line_api(settings, httpx_engine):
    settings.LINE_API_BASE_URL = LINE
    settings.LINE_NARROWCAST_MIN_RECIPIENTS = 50
    with respx.mock(assert_all_called=False) as router:
        router.get(f"{LINE}/v2/bot/message/quota", name="quota").respond(200, json={"type": "none"})
        router.get(f"{LINE}/v2/bot/message/quota/consumption", name="used").respond(
            200, json={"totalUsage": 0}
        )
        router.post(f"{LINE}/v2/bot/audienceGroup/upload", name="upload").respond(
            202, json={"audienceGroupId": AUDIENCE, "type": "UPLOAD"}
        )
        router.put(f"{LINE}/v2/bot/audienceGroup/upload", name="add").respond(202, json={})
        router.get(f"{LINE}/v2/bot/audienceGroup/{AUDIENCE}", name="audience").respond(200, json=READY)
        router.delete(f"{LINE}/v2/bot/audienceGroup/{AUDIENCE}", name="delete").respond(200, json={})
        router.post(f"{LINE}/v2/bot/message/narrowcast", name="narrowcast").respond(
            202, json={}, headers={"x-line-request-id": "req-1"}
        )
        router.get(f"{LINE}/v2/bot/message/progress/narrowcast", name="progress").respond(200, json=SUCCEEDED)
        router.post(f"{LINE}/v2/bot/message/multicast", name="multicast").respond(200, json={})
        yield router


@pytest.fixture
def task(db):
    tenant = TenantFactory(slug="acme")
    return ContentTaskFactory(tenant=tenant, issue_key="ACME-7", approval_seq=1)


def followers(task, n: int) -> None:
    LineContact.objects.bulk_create(LineContactFactory.build_batch(n, tenant=task.tenant, tags=["fans"]))


def run(task, *, at: datetime = NOW) -> Done | Wait:
    return publish(Context(tenant=task.tenant, task=task, content=TEXT, audience="tag:fans", now=at))


def sent_body(route) -> dict:
    return json.loads(route.calls.last.request.content)


def the_post(task) -> ChannelPost:
    return ChannelPost.objects.get(task=task, approval_seq=1)


def test_a_tag_under_50_followers_goes_by_multicast(line_api, task):
    followers(task, 49)

    assert isinstance(run(task), Done)

    assert line_api["multicast"].call_count == 1 and len(sent_body(line_api["multicast"])["to"]) == 49
    assert not line_api["upload"].called and not ChannelPost.objects.exists()


def test_without_the_setting_a_large_tag_still_goes_by_multicast(line_api, task, settings):
    settings.LINE_NARROWCAST_MIN_RECIPIENTS = 0
    followers(task, 60)

    assert isinstance(run(task), Done)
    assert line_api["multicast"].called and not line_api["upload"].called


def test_a_tag_of_50_followers_is_uploaded_as_an_audience_first(line_api, task):
    followers(task, 50)

    step = run(task)

    assert isinstance(step, Wait) and step.due_at == NOW + timedelta(seconds=5)
    upload = sent_body(line_api["upload"])
    assert upload["description"] == "automedia acme ACME-7 #1"
    users = LineContact.objects.filter(tenant=task.tenant).values_list("user_id", flat=True)
    assert sorted(a["id"] for a in upload["audiences"]) == sorted(users)
    assert not line_api["narrowcast"].called and not line_api["multicast"].called
    post = the_post(task)
    assert (post.channel, post.details["audience_id"], post.details["uploaded"]) == ("line", AUDIENCE, 50)


def test_it_waits_while_the_audience_is_in_progress(line_api, task):
    followers(task, 60)
    line_api["audience"].respond(200, json=IN_PROGRESS)

    run(task)
    step = run(task, at=NOW + timedelta(seconds=5))

    assert isinstance(step, Wait) and "IN_PROGRESS" in step.reason
    assert not line_api["narrowcast"].called


def test_it_narrowcasts_to_the_ready_audience_with_the_approvals_retry_key(line_api, task):
    followers(task, 60)

    run(task)
    step = run(task, at=NOW + timedelta(seconds=5))

    assert isinstance(step, Wait)
    request = line_api["narrowcast"].calls.last.request
    assert json.loads(request.content) == {
        "messages": TEXT,
        "recipient": {"type": "audience", "audienceGroupId": AUDIENCE},
    }
    key = narrowcast_key(tenant=task.tenant, issue_key="ACME-7", approval_seq=1)
    assert request.headers["X-Line-Retry-Key"] == key
    post = the_post(task)
    assert (post.post_id, post.phase, post.send_key) == ("req-1", ChannelPost.Phase.PROCESSING, key)
    attempt = DeliveryAttempt.objects.get(endpoint="/v2/bot/message/narrowcast")
    assert (attempt.outcome, attempt.status_code, attempt.request_id, attempt.retry_key) == (
        "sent",
        202,
        "req-1",
        key,
    )


def test_it_forbids_partial_delivery_when_the_months_quota_is_tight(line_api, task):
    followers(task, 60)
    line_api["quota"].respond(200, json={"type": "limited", "value": 1000})
    line_api["used"].respond(200, json={"totalUsage": 900})

    run(task)
    run(task, at=NOW + timedelta(seconds=5))

    limit = sent_body(line_api["narrowcast"])["limit"]
    assert limit == {"upToRemainingQuota": True, "forbidPartialDelivery": True}
    assert (
        DeliveryAttempt.objects.get(endpoint="/v2/bot/message/narrowcast").request_summary["limit"] == limit
    )


def test_it_adds_the_ids_past_10000_before_sending(line_api, task):
    followers(task, 10_050)

    run(task)
    added = run(task, at=NOW + timedelta(seconds=5))
    sent_after_add = line_api["narrowcast"].called
    run(task, at=NOW + timedelta(seconds=10))

    assert isinstance(added, Wait) and not sent_after_add
    assert len(sent_body(line_api["upload"])["audiences"]) == 10_000
    assert sent_body(line_api["add"])["audienceGroupId"] == AUDIENCE
    assert len(sent_body(line_api["add"])["audiences"]) == 50
    assert line_api["narrowcast"].call_count == 1


def test_it_polls_the_progress_to_the_end_and_ends_with_the_counts(line_api, task):
    followers(task, 60)
    waiting = {"phase": "waiting", "acceptedTime": ACCEPTED}
    line_api["progress"].side_effect = [
        httpx.Response(200, json=waiting),
        httpx.Response(200, json=waiting | {"phase": "sending", "targetCount": 60}),
        httpx.Response(200, json=SUCCEEDED),
    ]
    run(task)
    run(task, at=NOW + timedelta(seconds=5))

    steps = [run(task, at=NOW + timedelta(seconds=s)) for s in (10, 20, 35)]

    assert [type(s) for s in steps] == [Wait, Wait, Done]
    assert "sending" in steps[1].reason
    assert line_api["progress"].calls.last.request.url.params["requestId"] == "req-1"
    summary = steps[2].summary
    assert summary["recipients"] == 58 and summary["request_ids"] == ["req-1"]
    assert summary["narrowcast"] == {"audience": 60} | {k: v for k, v in SUCCEEDED.items() if k != "phase"}
    sent = DeliveryAttempt.objects.get(endpoint="/v2/bot/message/narrowcast")
    assert sent.request_summary["progress"]["successCount"] == 58 and sent.outcome == "sent"
    assert line_api["delete"].called
    assert the_post(task).phase == ChannelPost.Phase.DONE
    # The audience deleted, the user ids go too; their number stays.
    assert the_post(task).details["users"] == [] and the_post(task).details["audience_size"] == 60
    again = run(task, at=NOW + timedelta(seconds=40))
    assert isinstance(again, Done) and again.summary == summary  # a rerun reads, never sends
    assert line_api["narrowcast"].call_count == 1


def test_the_user_ids_stay_while_the_audience_could_not_be_deleted(line_api, task):
    followers(task, 60)
    line_api["delete"].respond(500, json={"message": "error"})
    for seconds in (0, 5, 10):
        run(task, at=NOW + timedelta(seconds=seconds))

    assert the_post(task).phase == ChannelPost.Phase.DONE and len(the_post(task).details["users"]) == 60


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (4, "errorCode 4: 50 人未満のオーディエンスが条件に含まれています"),
        (5, "errorCode 5: 今月の残り通数が足りず、一部の人にだけ届くのを避けるため配信が取り消されました"),
        (1, "errorCode 1: LINE の内部エラー"),
    ],
)
def test_a_failed_narrowcast_fails_the_delivery_with_its_error_code(line_api, task, code, why):
    followers(task, 60)
    failed = {"phase": "failed", "errorCode": code, "successCount": 0, "failureCount": 0, "targetCount": 60}
    line_api["progress"].respond(200, json=failed | {"acceptedTime": ACCEPTED})
    run(task)
    run(task, at=NOW + timedelta(seconds=5))

    with pytest.raises(PublishFailed) as failure:
        run(task, at=NOW + timedelta(seconds=10))

    assert why in failure.value.reason and "リクエストID req-1" in failure.value.reason
    progress = DeliveryAttempt.objects.get(endpoint="/v2/bot/message/progress/narrowcast")
    assert (progress.outcome, progress.request_summary["errorCode"]) == ("failed", code)
    sent = DeliveryAttempt.objects.get(endpoint="/v2/bot/message/narrowcast")
    assert sent.outcome == "failed" and why in sent.error


def test_a_lost_answer_is_sent_again_with_the_same_key_and_never_twice(line_api, task):
    followers(task, 60)
    line_api["narrowcast"].side_effect = [
        httpx.ReadTimeout("lost"),
        httpx.Response(
            409,
            json={"message": "The retry key is already accepted"},
            headers={"x-line-accepted-request-id": "req-0"},
        ),
    ]
    run(task)

    with pytest.raises(TransportError) as lost:
        run(task, at=NOW + timedelta(seconds=5))
    step = run(task, at=NOW + timedelta(seconds=65))

    assert not lost.value.permanent and isinstance(step, Wait)
    keys = [call.request.headers["X-Line-Retry-Key"] for call in line_api["narrowcast"].calls]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert [json.loads(c.request.content) for c in line_api["narrowcast"].calls][0] == sent_body(
        line_api["narrowcast"]
    )
    assert the_post(task).post_id == "req-0"
    outcomes = DeliveryAttempt.objects.filter(endpoint="/v2/bot/message/narrowcast").order_by("pk")
    assert [a.outcome for a in outcomes] == ["retry", "duplicate"]


def test_a_request_line_does_not_know_yet_is_looked_at_again(line_api, task):
    followers(task, 60)
    line_api["progress"].respond(404, json={"message": "Not found"})
    run(task)
    run(task, at=NOW + timedelta(seconds=5))

    step = run(task, at=NOW + timedelta(seconds=10))

    assert isinstance(step, Wait)


def test_an_account_that_may_not_use_audiences_fails_without_sending(line_api, task):
    followers(task, 60)
    line_api["upload"].respond(403, json={"message": "Access to this API is not available for your account"})

    with pytest.raises(TransportError) as refused:
        run(task)

    assert refused.value.permanent and not refused.value.auth
    assert "LINE_NARROWCAST_MIN_RECIPIENTS=0" in refused.value.message
    assert not line_api["narrowcast"].called


def test_the_write_back_comment_names_the_narrowcasts_counts():
    outcome = {
        "delivered_at": "2026-12-10T10:00:05+09:00",
        "recipients": 58,
        "request_ids": ["req-1"],
        "narrowcast": {"audience": 60, **SUCCEEDED},
    }

    comment = success_comment(outcome)

    assert "LINE に配信しました。配信先: 58 件\nLINE リクエストID: req-1" in comment
    assert comment.endswith("ナローキャスト: 成功 58 人 / 失敗 2 人 / 対象 60 人（オーディエンス 60 人）")


# -- against the fake LINE and the fake Backlog --------------------------------------------------


@pytest.fixture
def large_tag(settings, tenant, line, contacts):
    """57 more followers tagged active: 60 in the issue's audience, narrowcast from 50."""
    settings.LINE_NARROWCAST_MIN_RECIPIENTS = 50
    line.set_narrowcast_timing(audience_seconds=1, waiting_seconds=2, sending_seconds=2)
    for _ in range(57):
        LineContactFactory(tenant=tenant, tags=["active"])


def fire_until_done(key: str) -> list[str]:
    """Each due run of the schedule (waits and retries) until the delivery ended."""
    results = []
    for _ in range(10):
        results.append(fire(key))
        if not results[-1].startswith(("waiting", "retry in")):
            break
    return results


def test_a_large_tag_goes_out_as_one_narrowcast_and_its_counts_are_written_back(
    large_tag, approved, line, fake_backlog
):
    key = approved()

    results = fire_until_done(key)

    assert results[-1] == "delivered" and len(results) > 2
    [sent] = line.sent("narrowcast")
    assert sent.status == 202 and line.sent("multicast") == []
    assert line.audiences() == {}  # deleted once it served
    assert fake_backlog.issue(key)["status"]["name"] == "automedia実行済み"
    comment = texts(fake_backlog, key)[-1]
    assert f"LINE リクエストID: {sent.request_id}" in comment
    assert "ナローキャスト: 成功 60 人 / 失敗 0 人 / 対象 60 人（オーディエンス 60 人）" in comment


def test_the_approval_says_the_tag_goes_by_narrowcast(large_tag, approved, fake_backlog, line):
    key = approved()

    assert "LINE 配信方法: ナローキャスト" in "\n".join(texts(fake_backlog, key))
    assert line.requests and any(r.path == "/v2/bot/message/validate/narrowcast" for r in line.requests)


def test_a_narrowcast_whose_answer_was_lost_is_accepted_once(large_tag, approved, line):
    key = approved()
    line.fail_next(500, path_prefix="/v2/bot/message/narrowcast", then_accept=True)

    results = fire_until_done(key)

    assert results[-1] == "delivered"
    narrowcasts = [r for r in line.requests if r.path == "/v2/bot/message/narrowcast"]
    assert [r.status for r in narrowcasts] == [500, 409]
    assert len(line.sent("narrowcast")) == 1


def test_a_quota_grown_short_cancels_the_whole_narrowcast(large_tag, approved, line, fake_backlog):
    line.set_quota(value=100, total_usage=30)  # 60 fit at approval, with little to spare
    key = approved()
    line.set_quota(value=100, total_usage=60)  # sent from elsewhere meanwhile

    results = fire_until_done(key)

    [sent] = line.sent("narrowcast")
    assert sent.body["limit"] == {"upToRemainingQuota": True, "forbidPartialDelivery": True}
    assert results[-1] != "delivered"
    assert fake_backlog.issue(key)["status"]["name"] == "automediaエラー"
    assert "errorCode 5" in texts(fake_backlog, key)[-1]
    assert line.total_usage == 60

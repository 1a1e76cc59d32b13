"""An API token's dedupe keys live in its own space: it cannot stand in for automedia's
posts or another token's, and learns nothing of them."""

from __future__ import annotations

import pytest

from linepush.models import LineApiToken, LinePushItem
from linepush.producers import task_approved_enqueue
from tests.helpers.factories import ContentTaskFactory
from tests.helpers.linepush import enqueue, group, shop

pytestmark = pytest.mark.django_db
URL = "/api/linepush/items/"


@pytest.fixture
def tenant(db):
    return shop()


@pytest.fixture
def team(tenant):
    return group(tenant)


def token(tenant, name="talent-hub", **kw) -> tuple[LineApiToken, str]:
    return LineApiToken.issue(tenant=tenant, name=name, **kw)


def post(client, plain: str, team, key: str, text: str = "トークンの文面", trigger="signal_approved"):
    data = {
        "ext_group_id": team.group_id,
        "trigger_type": trigger,
        "payload": [{"type": "text", "text": text}],
        "dedupe_key": key,
    }
    return client.post(URL, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {plain}")


def approved_task(tenant, team):
    return ContentTaskFactory(
        tenant=tenant,
        summary="年末告知",
        status_name="automedia承認",
        parsed={"contact_group": team.group_id},
    )


def test_a_tokens_item_under_a_producers_key_does_not_stand_in_for_the_producers_post(client, tenant, team):
    task = approved_task(tenant, team)
    key = f"task_approved:{tenant.slug}:{task.issue_key}:{task.approval_seq}"
    _, plain = token(tenant, triggers=["task_approved"], skip_approval=True)
    squatted = post(client, plain, team, key, trigger="task_approved")
    assert squatted.status_code == 201

    produced = task_approved_enqueue(task=task)

    assert produced.pk != squatted.json()["id"]
    assert produced.payload[0]["text"].startswith("【タスク承認】「年末告知」")
    assert (produced.origin, produced.api_token, produced.dedupe_space) == ("task_approved", None, "")
    assert LinePushItem.objects.filter(dedupe_key=key).count() == 2
    ours, theirs = (LinePushItem.objects.get(pk=pk) for pk in (produced.pk, squatted.json()["id"]))
    assert ours.retry_key != theirs.retry_key  # LINE would refuse the second as a repeat


def test_a_producers_key_answers_409_without_the_producers_post(client, tenant, team):
    mine = enqueue(tenant, team, key="reminder:shop:ACME-1:2026-12-10", text="秘密の下書き")
    mine.last_error = "LINE API 500"
    mine.save()
    _, plain = token(tenant)

    answer = post(client, plain, team, "reminder:shop:ACME-1:2026-12-10")

    assert answer.status_code == 409
    text = answer.content.decode()
    assert "秘密の下書き" not in text and "LINE API 500" not in text and team.group_id not in text
    assert set(answer.json()) == {"dedupe_key"}
    assert LinePushItem.objects.count() == 1


def test_another_tokens_key_answers_409_and_its_own_key_200(client, tenant, team):
    _, first = token(tenant, name="hub")
    _, second = token(tenant, name="crm")
    made = post(client, first, team, "signal:1", text="最初のトークン")

    other = post(client, second, team, "signal:1", text="二つ目のトークン")
    again = post(client, first, team, "signal:1", text="もう一度")

    assert (made.status_code, other.status_code, again.status_code) == (201, 409, 200)
    assert "最初のトークン" not in other.content.decode()
    assert again.json()["id"] == made.json()["id"]
    assert LinePushItem.objects.count() == 1


def test_a_token_gets_its_own_item_back_after_a_producer_used_the_key(client, tenant, team):
    _, plain = token(tenant, triggers=["reminder"])
    made = post(client, plain, team, "reminder:shop:ACME-2:2026-12-10", trigger="reminder")
    enqueue(tenant, team, key="reminder:shop:ACME-2:2026-12-10", text="automedia の投稿")

    again = post(client, plain, team, "reminder:shop:ACME-2:2026-12-10", trigger="reminder")

    assert (made.status_code, again.status_code) == (201, 200)
    assert again.json()["payload"] == [{"type": "text", "text": "トークンの文面"}]


def test_each_item_records_its_origin(client, tenant, team):
    row, plain = token(tenant)
    by_token = LinePushItem.objects.get(pk=post(client, plain, team, "signal:2").json()["id"])
    by_producer = task_approved_enqueue(task=approved_task(tenant, team))

    assert (by_token.origin, by_token.api_token, by_token.dedupe_space) == ("api", row, f"token:{row.pk}")
    assert by_token.origin_label == f"API トークン「{row}」"
    assert by_producer.origin_label == "automedia（タスク承認）"

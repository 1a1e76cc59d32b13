"""Group posts through automedia's real processes: gunicorn, run_scheduler, both qclusters.

One short test: the API queues a post over HTTP and the fake LINE gets it from the
scheduler's loop within seconds; a signed LINE webhook (join) is answered at once and
a worker records the group.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import httpx
import pytest

from sandbox.stack import Stack

pytestmark = pytest.mark.e2e

SECRET = "e2e-channel-secret"
GROUP = "C" + "e" * 32
PUSH = "/v2/bot/message/push"


def test_a_post_queued_through_the_api_reaches_the_group(tmp_path):
    with Stack(tmp_dir=tmp_path, backlog_latency=0) as stack:
        tenant = stack.add_tenant()
        stack.manage("add_tenant", "e2e", "--line-channel-secret", SECRET)
        token = stack.manage(
            "linepush_token", "e2e", "--name", "talent-hub", "--triggers", "task_approved", "--skip-approval"
        ).stdout.strip()
        stack.spawn("worker", "qcluster")
        stack.spawn("deliverer", "qcluster", env={"Q_CLUSTER_NAME": "deliveries"})
        stack.spawn("scheduler", "run_scheduler")
        stack.line.add_group(GROUP, name="撮影チーム", member_count=4)

        body = json.dumps({"destination": "U" + "b" * 32, "events": [_join_event()]}).encode()
        signature = base64.b64encode(hmac.new(SECRET.encode(), body, hashlib.sha256).digest()).decode()
        answer = httpx.post(tenant["line_webhook_url"], content=body, headers={"X-Line-Signature": signature})
        assert answer.status_code == 200 and answer.json()["accepted"] == 1
        stack.wait_for(lambda: _group_members(stack) == "4", 20, 0.2, "the worker to record the group")
        stack.shell(
            "from line.models import LineSource; "
            f"LineSource.objects.filter(group_id='{GROUP}').update(allow_outbound_push=True, push_opt_in_triggers=['task_approved'])"
        )

        item = {
            "ext_group_id": GROUP,
            "trigger_type": "task_approved",
            "payload": [{"type": "text", "text": "タスクを承りました"}],
            "dedupe_key": "e2e:task-1:approved",
        }
        url, auth = f"{stack.web_url}/api/linepush/items/", {"Authorization": f"Bearer {token}"}
        assert httpx.post(url, json=item, headers=auth).status_code == 201
        stack.wait_for(lambda: stack.line.sent(PUSH), 10, 0.05, "the push")
        assert httpx.post(url, json=item, headers=auth).status_code == 200

        [sent] = stack.line.sent(PUSH)
        assert sent.body["to"] == GROUP and sent.body["messages"][0]["text"] == "タスクを承りました"


def _join_event() -> dict:
    return {
        "type": "join",
        "mode": "active",
        "timestamp": 1765324800000,
        "source": {"type": "group", "groupId": GROUP},
        "webhookEventId": "01JFE2E0000000000000000001",
        "deliveryContext": {"isRedelivery": False},
        "replyToken": "e2e-reply-token",
    }


def _group_members(stack: Stack) -> str:
    return stack.shell(
        "from line.models import LineSource; "
        f"s = LineSource.objects.filter(group_id='{GROUP}').first(); print(s.member_count if s else '')"
    )

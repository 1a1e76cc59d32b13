"""The linepush cast: a tenant with LINE credentials, its groups, queued posts, a scheduler pass,
and LINE's signed webhooks to /hooks/line/shop."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import itertools
import json

from deliveries.management.commands.run_scheduler import Command
from deliveries.scheduler_steps import Pass
from line.models import LineSource, Trigger
from linepush.models import LinePushItem
from linepush.services import push_enqueue
from tests.helpers.backlog import load_fixture
from tests.helpers.factories import TenantFactory

PUSH = "/v2/bot/message/push"
SECRET = "line-channel-secret"
URL = "/hooks/line/shop"
USER = "U4af4980629f1e2c0f3b5d7e9a1c3e5f7"
ALL_TRIGGERS = list(Trigger.values)
_groups = itertools.count(1)


def shop():
    return TenantFactory(
        slug="shop", line_channel_token="line-channel-token", line_channel_secret="line-channel-secret"
    )


def new_group_id() -> str:
    return f"C{next(_groups):032x}"


def group(
    tenant, group_id: str | None = None, *, triggers=None, allow=True, members=3, **fields
) -> LineSource:
    return LineSource.objects.create(
        tenant=tenant,
        group_id=group_id or new_group_id(),
        name="撮影チーム",
        allow_outbound_push=allow,
        push_opt_in_triggers=ALL_TRIGGERS if triggers is None else triggers,
        member_count=members,
        **fields,
    )


def enqueue(
    tenant, source, key: str = "k1", trigger: str = Trigger.REMINDER, text: str = "明日 10:00 撮影です", **kw
):
    group_id = source.group_id if isinstance(source, LineSource) else source
    item, _ = push_enqueue(
        tenant=tenant,
        ext_group_id=group_id,
        trigger_type=trigger,
        payload=[{"type": "text", "text": text}],
        dedupe_key=key,
        **kw,
    )
    return item


def step() -> Pass:
    """One pass of `run_scheduler` (django-q2 runs the worker task inline in tests)."""
    command = Command()
    command.name, command.batch = "test-scheduler", 50
    return command.handle_one()


def reload(item: LinePushItem) -> LinePushItem:
    item.refresh_from_db()
    return item


def fixture(name: str, **changes) -> dict:
    body = copy.deepcopy(load_fixture(f"line/{name}.json"))
    body["events"][0].update(changes)
    return body


def sign(raw: bytes, secret: str = SECRET) -> str:
    return base64.b64encode(hmac.new(secret.encode(), raw, hashlib.sha256).digest()).decode()


def deliver(client, body: dict | bytes, signature: str | None = None):
    raw = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    headers = {"HTTP_X_LINE_SIGNATURE": sign(raw) if signature is None else signature}
    return client.post(URL, raw, content_type="application/json", **headers)

"""The linepush cast: a tenant with LINE credentials, its groups, queued posts, a scheduler pass."""

from __future__ import annotations

import itertools

from deliveries.management.commands.run_scheduler import Command
from linepush.models import LinePushItem, LineSource, Trigger
from linepush.services import push_enqueue
from tests.factories import TenantFactory

PUSH = "/v2/bot/message/push"
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


def step() -> bool:
    """One pass of `run_scheduler` (django-q2 runs the worker task inline in tests)."""
    command = Command()
    command.name, command.batch, command.task_size = "test-scheduler", 50, 10
    return command.handle_one()


def reload(item: LinePushItem) -> LinePushItem:
    item.refresh_from_db()
    return item

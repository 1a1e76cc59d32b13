"""A group's member count, asked from LINE before its first push is counted.

A push to a group or room costs one message per member
(https://developers.line.biz/en/docs/messaging-api/pricing/), so the quota hold and the
usage figure need the count. One unknown (LINE did not answer at the join, a row older than
the counts) is asked from LINE's member count endpoints before the claim counts a push to
it, never taken as one member.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef

from core.transport import TransportError
from line.models import LineSource
from line.services import member_count_read
from linepush.models import LinePushItem

logger = logging.getLogger(__name__)

# A group LINE did not answer for: its due posts wait this long before it is asked again.
MEMBER_COUNT_RETRY = timedelta(minutes=1)
PER_PASS = 20  # groups asked in one scheduler pass; the others wait for the next


def _unknown(now: datetime):
    due = LinePushItem.objects.filter(
        status=LinePushItem.Status.PENDING,
        scheduled_at__lte=now,
        tenant_id=OuterRef("tenant_id"),
        ext_group_id=OuterRef("group_id"),
    )
    sources = LineSource.objects.filter(
        member_count__isnull=True, left_at__isnull=True, allow_outbound_push=True
    )
    return sources.filter(Exists(due)).select_related("tenant").order_by("id")[:PER_PASS]


def member_counts_fill(*, now: datetime) -> int:
    """Ask LINE the member count of each group with a due post and no known count (outside
    any transaction: the claim runs after); returns how many groups were asked."""
    sources = list(_unknown(now))
    for source in sources:
        member_count_ask(source=source, now=now)
    return len(sources)


def member_count_ask(*, source: LineSource, now: datetime) -> int | None:
    """LINE's count for one group or room, stored; None when LINE did not give one (its due
    posts then wait, or fail when LINE refuses for good, e.g. 404 for a group the bot left)."""
    try:
        count = member_count_read(source=source)
    except TransportError as exc:
        _unanswered(source, now, exc.message, permanent=exc.permanent)
        return None
    except (KeyError, TypeError, ValueError) as exc:
        _unanswered(source, now, f"answer without a count: {exc!r}", permanent=False)
        return None
    LineSource.objects.filter(pk=source.pk).update(member_count=max(0, count), updated_at=now)
    return count


def _unanswered(source: LineSource, now: datetime, reason: str, *, permanent: bool) -> None:
    logger.warning("member count of %s (%s) failed: %s", source.group_id, source.tenant.slug, reason)
    due = LinePushItem.objects.filter(
        tenant_id=source.tenant_id,
        ext_group_id=source.group_id,
        status=LinePushItem.Status.PENDING,
        scheduled_at__lte=now,
    )
    if permanent:
        due.update(
            status=LinePushItem.Status.FAILED,
            last_error=f"LINE がこのグループのメンバー数に答えないため送信しません（{reason}）",
        )
        return
    due.update(
        scheduled_at=now + MEMBER_COUNT_RETRY,
        last_error=f"LINE にグループのメンバー数を確認できないため延期しました（{reason}）",
    )

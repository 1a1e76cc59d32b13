"""Instagram at approval time: the account's publishing limit, counted at the post's time.

An account publishes at most `quota_total` posts in a rolling `quota_duration`
(https://developers.facebook.com/documentation/instagram-platform/instagram-graph-api/reference/ig-user/content_publishing_limit),
and Meta asks apps that schedule posts to keep to it. An approval counts, for its due time
and for every approval scheduled after it within one window, automedia's published and
scheduled posts, this one and, while the window reaches back before now, the account's
other posts Meta counted. When Meta cannot be asked, automedia's own posts are counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from core.timeutil import fmt_jst
from core.transport import TransportError
from deliveries.channels.approval_base import ApprovalChecks, post_rules
from deliveries.channels.instagram.transport import FALLBACK_QUOTA, InstagramTransport
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import ContentTask, DeliverySchedule

DEFAULT_WINDOW = 86400


def check(
    checks: ApprovalChecks,
    *,
    tenant: Tenant,
    parsed: ParsedTask,
    override: dict,
    due_at: datetime,
    now: datetime,
    task: ContentTask | None,
) -> None:
    """The template rules, then the publishing limit at the post's time."""
    post_rules(
        checks, tenant=tenant, channel=ChannelAccount.Channel.INSTAGRAM, parsed=parsed, override=override
    )
    if checks.ok:
        verdict = instagram_verdict(tenant=tenant, due_at=due_at, now=now, task=task)
        checks.lines += verdict.lines
        checks.problems += verdict.problems


def counts_others(*, tenant: Tenant) -> bool:
    """The limit counts the posts scheduled in the post's window."""
    return True


@dataclass
class InstagramVerdict:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def instagram_verdict(
    *, tenant, due_at: datetime, now: datetime, task: ContentTask | None
) -> InstagramVerdict:
    verdict = InstagramVerdict()
    usage, total, window, unknown = _meta_usage(tenant, now)
    span = timedelta(seconds=window)
    published = _published(tenant, due_at - span, now)
    others = max(usage - sum(1 for at in published if at > now - span), 0)
    scheduled = _scheduled(tenant, due_at - span, due_at + span, task)
    times = sorted([*published, *scheduled, due_at])
    worst_at, worst = due_at, 0
    for end in [due_at, *(at for at in scheduled if at > due_at)]:
        count = sum(1 for at in times if end - span < at <= end) + (others if end - span < now else 0)
        if count > worst:
            worst_at, worst = end, count
    hours = window // 3600
    where = f"{fmt_jst(worst_at)} までの {hours} 時間"
    verdict.lines.append(f"Instagram の投稿枠: {where}で {worst} / {total} 件（この承認を含む{unknown}）")
    if worst > total:
        verdict.problems.append(
            f"Instagram の投稿枠を超えます: {where}の投稿が {worst} 件になります"
            f"（上限 {total} 件、この承認を含む）。投稿日時をずらしてください。"
        )
    return verdict


def _meta_usage(tenant, now: datetime) -> tuple[int, int, int, str]:
    """(posts Meta counted in the last window, the limit, the window, a note when unknown)."""
    account = ChannelAccount.objects.filter(tenant=tenant, channel=ChannelAccount.Channel.INSTAGRAM).first()
    usable = (
        account is not None
        and account.access_token
        and account.token_invalid_at is None
        and (account.expires_at is None or account.expires_at > now)
    )
    if not usable:
        return 0, FALLBACK_QUOTA, DEFAULT_WINDOW, "、Instagram の使用数は未確認"
    transport = InstagramTransport(token=account.access_token)
    try:
        usage, total, window = transport.publishing_limit(account.ig_user_id)
    except TransportError as exc:
        return 0, FALLBACK_QUOTA, DEFAULT_WINDOW, f"、Instagram の使用数は未確認: {exc.message}"
    finally:
        transport.close()
    return usage, total, window, ""


def _published(tenant, since: datetime, now: datetime) -> list[datetime]:
    return list(
        ChannelPost.objects.filter(
            tenant=tenant, channel="instagram", published_at__gt=since, published_at__lte=now
        ).values_list("published_at", flat=True)
    )


def _scheduled(tenant, since: datetime, until: datetime, task: ContentTask | None) -> list[datetime]:
    """Due times of the other Instagram approvals not published yet."""
    rows = DeliverySchedule.objects.filter(
        tenant=tenant,
        task__channel="instagram",
        stage=DeliverySchedule.Stage.DELIVER,
        due_at__gt=since,
        due_at__lt=until,
    )
    if task is not None:
        rows = rows.exclude(task=task)
    found = list(rows.values_list("due_at", "task_id", "task__approval_seq"))
    posted = set(
        ChannelPost.objects.filter(
            task_id__in=[task_id for _, task_id, _ in found], published_at__isnull=False
        ).values_list("task_id", "approval_seq")
    )
    return [due for due, task_id, seq in found if (task_id, seq) not in posted]

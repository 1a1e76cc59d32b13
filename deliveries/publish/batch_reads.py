"""What a `deliver_batch` task reads once for all its rows, before they run: the issues
(one Backlog call per tenant) and which approvals already sent something."""

from __future__ import annotations

import logging

from backlog_bridge.client import BacklogError, shared_client
from core.models import Tenant
from deliveries.channels.models import ChannelPost
from deliveries.models import ContentTask, DeliveryAttempt

logger = logging.getLogger(__name__)


def issues_prefetch(*, rows: dict[int, tuple[int, int]], tenants: dict[int, Tenant]) -> dict[int, dict]:
    """{schedule id: issue JSON} for the rows about to be delivered ({schedule id:
    (tenant id, issue id)}; `tenants` by id): one Backlog call per tenant for a batch
    instead of one per delivery. A row whose issue is missing from the answer (deleted,
    or the call failed) reads it itself."""
    by_tenant: dict[int, dict[int, int]] = {}
    for pk, (tenant_id, issue_id) in rows.items():
        by_tenant.setdefault(tenant_id, {})[issue_id] = pk
    found: dict[int, dict] = {}
    for tenant_id, wanted in by_tenant.items():
        if len(wanted) < 2:
            continue
        tenant = tenants[tenant_id]
        try:
            issues = shared_client(tenant).issues_by_id(list(wanted))
        except BacklogError as exc:
            logger.warning("batch read of %s issues failed, each reads its own: %s", tenant.slug, exc)
            continue
        found |= {wanted[issue["id"]]: issue for issue in issues if issue.get("id") in wanted}
    return found


def sent_before(*, tasks: list[ContentTask]) -> set[int]:
    """The ids among `tasks` whose current approval already has a platform post (ChannelPost)
    or a send LINE accepted: two queries for a batch; the others are `fresh`."""
    seq = {task.pk: task.approval_seq for task in tasks}
    posted = ChannelPost.objects.filter(task_id__in=seq).values_list("task_id", "approval_seq")
    accepted = DeliveryAttempt.objects.filter(
        task_id__in=seq, correction__isnull=True, outcome__in=DeliveryAttempt.ACCEPTED
    ).values_list("task_id", "approval_seq")
    return {task_id for rows in (posted, accepted) for task_id, approval in rows if seq[task_id] == approval}

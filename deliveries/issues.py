"""An issue as Backlog says it is now: the authority every lifecycle decision reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from backlog_bridge.body.fingerprint import content_fingerprint
from backlog_bridge.body.issue import parse_issue
from backlog_bridge.body.publish_at import parse_publish_at
from backlog_bridge.body.task import ParsedTask
from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.identifiers import issue_key_valid
from core.models import Tenant
from deliveries.models import FIELD_DELIVERED_AT, STATUS_APPROVED, ContentTask


@dataclass
class IssueState:
    """The issue as Backlog says it is now (the authority)."""

    issue_id: int
    summary: str
    description: str
    status_id: int
    status_name: str
    parsed: ParsedTask
    fingerprint: str
    delivered_at: datetime | None
    issue_key: str = ""  # Backlog's `issueKey`: the key the issue answers to now

    @property
    def approved(self) -> bool:
        return self.status_name == STATUS_APPROVED

    def belongs_to(self, tenant: Tenant) -> bool:
        """Whether Backlog's answer is an issue of the tenant's project (its key says so)."""
        project, _, number = self.issue_key.rpartition("-")
        return issue_key_valid(self.issue_key) and project == tenant.backlog_project_key and number != ""


def task_for_issue(*, tenant: Tenant, state: IssueState) -> ContentTask:
    """The one task of the issue Backlog answered: the one holding its numeric id, else the
    one under the key Backlog gives it, else a new one under that key.

    A key from a webhook or a comment is only a hint (format-checked) of which issue to
    read: whatever key was asked for, the issue it resolves to has one task, so no payload
    can register one issue twice (and post it twice). Callers check `belongs_to` first."""
    # One query for both candidates (the scan's rescues make thousands of these).
    candidates = ContentTask.objects.filter(
        Q(issue_id=state.issue_id) | Q(issue_key=state.issue_key), tenant=tenant
    ).order_by("pk")
    found = list(candidates[:2])  # (tenant, issue_key) is unique: at most one per key
    task = next((t for t in found if t.issue_id == state.issue_id), None)
    task = task or next((t for t in found if t.issue_key == state.issue_key), None)
    if task is None:
        task = _task_create(tenant, state.issue_key)
    task.tenant = tenant  # the same row: not read (and its secrets decrypted) again per task
    return task


def _task_create(tenant: Tenant, issue_key: str) -> ContentTask:
    """get_or_create without its first SELECT: the caller just looked."""
    try:
        with transaction.atomic():
            return ContentTask.objects.create(tenant=tenant, issue_key=issue_key)
    except IntegrityError:  # another process created it meanwhile
        return ContentTask.objects.get(tenant=tenant, issue_key=issue_key)


def issue_read(*, client: BacklogClient, issue_key: str) -> IssueState | None:
    try:
        issue = client.get_issue(issue_key)
    except BacklogError as exc:
        if exc.status == 404:
            return None
        raise
    return issue_state(issue)


def issue_state(issue: dict) -> IssueState:
    """An IssueState from Backlog's issue JSON (get-issue or the issue list)."""
    custom_fields = issue.get("customFields") or []
    description = issue.get("description") or ""
    return IssueState(
        issue_id=issue["id"],
        summary=issue.get("summary") or "",
        description=description,
        status_id=issue["status"]["id"],
        status_name=issue["status"]["name"],
        parsed=parse_issue(description=description, custom_fields=custom_fields),
        fingerprint=content_fingerprint(description),
        delivered_at=_delivered_at(custom_fields),
        issue_key=issue.get("issueKey") or "",
    )


def _delivered_at(custom_fields: list[dict]) -> datetime | None:
    value = next((f.get("value") for f in custom_fields if f.get("name") == FIELD_DELIVERED_AT), None)
    if not value or not isinstance(value, str):
        return None
    try:
        return parse_publish_at(value)
    except ValueError:
        return timezone.now()  # unreadable, but present: it was delivered

"""The fake Backlog's space: projects, issues, comments and activities, and the writes a
person makes in Backlog's UI. Served over HTTP by sandbox/backlog/server.py."""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from sandbox.backlog.bulk import BulkEdits, bulk_link
from sandbox.backlog.records import (
    DEFAULT_CUSTOM_FIELDS,
    DEFAULT_STATUSES,
    HUMAN,
    PRIORITIES,
    PROJECT_KEY,
    Change,
    Edit,
    Fault,
    IssueQuery,
    Json,
    Project,
    RecordedRequest,
    coerce_field_value,
    commented_content,
    custom_field_json,
    diff,
    iso,
    issue_content,
    project_json,
    set_field_value,
    sort_key,
    status_json,
    utc_now,
)
from sandbox.backlog.settings_api import ADMINISTRATOR, webhook_json
from sandbox.backlog.webhooks import WebhookPoster


class BacklogSpace(BulkEdits):
    """A Backlog space with projects, issues, comments, activities and webhooks, in memory.

    Writes through the Python methods act as ``user`` (HUMAN by default); writes through the
    HTTP API act as BOT. Every write records one activity, appends it to ``outbox`` and, in
    ``webhook_mode="post"``, queues it for the project's webhook URL.
    """

    rate_limit_per_minute = 100_000
    """X-RateLimit-Limit until ``set_rate_limits``: high, so that a paced client never waits."""

    def __init__(
        self,
        *,
        api_key: str = "test-api-key",
        webhook_mode: str = "collect",
    ) -> None:
        if webhook_mode not in ("collect", "post"):
            raise ValueError("webhook_mode must be 'collect' or 'post'")
        self.api_key = api_key
        self.api_user_role = ADMINISTRATOR
        """The API key's user's roleType: 1 (Administrator) may add statuses, custom fields
        and webhooks; any other role is answered 403, as Backlog does."""
        self.webhook_mode = webhook_mode
        self.requests: list[RecordedRequest] = []
        self.outbox: list[Json] = []
        self._lock = threading.RLock()
        self._poster = WebhookPoster() if webhook_mode == "post" else None
        self._faults: list[Fault] = []
        self._outages: list[tuple[float, float]] = []
        self.outage_status = 503
        self.clock: Callable[[], float] = time.time
        """Wall clock of the outage and rate-limit windows; tests may replace it."""
        self.rate_limits: dict[str, int] = {}  # per group, enforced once set (set_rate_limits)
        self.rate_limit_window, self.rate_limit_enforced = 60.0, False
        self.rate_limit_generation = 0  # set_rate_limits starts the count afresh
        self.rate_limited = 0  # calls answered 429 because a limit was spent (not fail_next)
        self._projects: dict[str, Project] = {}
        self._projects_by_id: dict[int, Project] = {}
        self._issues: dict[str, Json] = {}
        self._issues_by_id: dict[int, Json] = {}
        self._comments: dict[int, list[Json]] = {}
        self._list_cache: dict[IssueQuery, list[Json]] = {}
        # Distinct ranges so that an id used as a key_id (or the reverse) is caught.
        self._issue_ids = itertools.count(10_001)
        self._comment_ids = itertools.count(50_001)
        self._activity_ids = itertools.count(1)
        self._tx_ids = itertools.count(1)
        self._webhook_ids = itertools.count(1)
        self._issue_type_ids = itertools.count(1)

    # setup

    def add_project(
        self,
        key: str,
        *,
        project_id: int | None = None,
        name: str | None = None,
        statuses: Sequence[tuple[int, str]] = DEFAULT_STATUSES,
        custom_fields: Sequence[tuple[int, str, int]] = DEFAULT_CUSTOM_FIELDS,
    ) -> Json:
        if not PROJECT_KEY.fullmatch(key):
            raise ValueError(f"{key!r} is not a Backlog project key (A-Z, 0-9, _)")
        with self._lock:
            if key in self._projects:
                raise ValueError(f"project {key} already exists")
            pid = project_id if project_id is not None else max(self._projects_by_id, default=99) + 1
            if pid in self._projects_by_id:
                raise ValueError(f"project id {pid} already exists")
            project = self._new_project(pid, key, name or key, statuses, custom_fields)
            self._projects[key] = project
            self._projects_by_id[pid] = project
            return copy.deepcopy(project.data)

    def _new_project(
        self,
        pid: int,
        key: str,
        name: str,
        statuses: Sequence[tuple[int, str]],
        custom_fields: Sequence[tuple[int, str, int]],
    ) -> Project:
        issue_type = {
            "id": next(self._issue_type_ids),
            "projectId": pid,
            "name": "タスク",
            "color": "#7ea800",
            "displayOrder": 0,
        }
        return Project(
            data=project_json(pid, key, name, len(self._projects)),
            statuses=[status_json(pid, sid, sname, i) for i, (sid, sname) in enumerate(statuses)],
            custom_fields=[custom_field_json(pid, spec, i) for i, spec in enumerate(custom_fields)],
            issue_types=[issue_type],
        )

    def set_webhook(self, project_key: str, url: str | None) -> None:
        """The project's webhooks become one to `url` for every event (none for None), as
        if a person had set it in the project's settings."""
        with self._lock:
            project = self._project_or_error(project_key)
            project.webhooks = [] if url is None else [webhook_json(next(self._webhook_ids), url)]

    def fail_next(
        self,
        status: int,
        *,
        count: int = 1,
        method: str | None = None,
        path_prefix: str | None = None,
        headers: dict | None = None,
        body: dict | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer the next ``count`` matching API calls with ``status`` after ``delay`` seconds.

        A status below 400 only delays the call, which is then served normally: a client that
        times out meanwhile still has its change applied, as with a slow real server.
        """
        fault = Fault(status, count, method, path_prefix, dict(headers or {}), body, delay)
        with self._lock:
            self._faults.append(fault)

    def set_rate_limits(self, *, read: int, update: int, search: int | None = None, window: float = 60.0):
        """Enforce Backlog's per-user limits per group (read = GET, update = POST / PATCH / DELETE,
        search = the issue list) and ``window`` seconds of ``clock()``: one more call answers 429
        with Remaining 0 and changes nothing."""
        with self._lock:
            self.rate_limits = {"read": read, "update": update, "search": read if search is None else search}
            self.rate_limit_window, self.rate_limit_enforced = window, True
            # Limits that apply from now on: calls made before under other limits are not
            # counted against them (a real space's limits do not change mid-window).
            self.rate_limit_generation += 1

    def set_outages(self, windows: Iterable[tuple[float, float]], *, status: int = 503) -> None:
        """While ``clock()`` is inside one of the ``[start, end)`` windows (epoch seconds), every
        API call answers ``status`` and changes nothing, as during a Backlog outage; the HTML UI
        and the webhooks of writes made here are not affected. The body is the fake's choice
        (Backlog's error shape, code 1 "InternalError"). An empty list ends the outages."""
        spans = sorted((float(start), float(end)) for start, end in windows)
        if any(end <= start for start, end in spans):
            raise ValueError("an outage window ends after it starts")
        with self._lock:
            self._outages = spans
            self.outage_status = status

    def in_outage(self) -> bool:
        now = self.clock()
        with self._lock:
            return any(start <= now < end for start, end in self._outages)

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def flush_webhooks(self, timeout: float = 5.0) -> bool:
        """Wait until every queued webhook POST was attempted; False on timeout."""
        return self._poster is None or self._poster.flush(timeout)

    # writes, as a person in Backlog's UI would make them

    def create_issue(
        self,
        project_key: str,
        *,
        summary: str,
        description: str = "",
        status: str = "未対応",
        custom_fields: Mapping[str, str | None] | None = None,
        user: Json = HUMAN,
    ) -> Json:
        """Create an issue (activity type 1). Unlike Backlog, any initial status is allowed."""
        with self._lock:
            project = self._project_or_error(project_key)
            issue = self._create(
                project,
                summary=summary,
                description=description,
                status=project.status_named(status),
                field_values=self._values_by_name(project, custom_fields or {}),
                user=user,
            )
            return copy.deepcopy(issue)

    def update_issue(
        self,
        issue_key: str,
        *,
        status: str | None = None,
        description: str | None = None,
        summary: str | None = None,
        custom_fields: Mapping[str, str | None] | None = None,
        comment: str = "",
        user: Json = HUMAN,
    ) -> Json:
        """Change fields in one step: one type-2 activity with one changes[] entry per field."""
        with self._lock:
            issue = self._issue_or_error(issue_key)
            project = self._project_of(issue)
            edit = Edit(
                status=project.status_named(status) if status is not None else None,
                summary=summary,
                description=description,
                field_values=self._values_by_name(project, custom_fields or {}),
            )
            self._update(issue, edit, comment=comment, user=user)
            return copy.deepcopy(issue)

    def add_comment(self, issue_key: str, content: str, *, user: Json = HUMAN) -> Json:
        if not content.strip():
            raise ValueError("a comment needs content")
        with self._lock:
            return copy.deepcopy(self._comment(self._issue_or_error(issue_key), content, user))

    def delete_issue(self, issue_key: str, *, user: Json = HUMAN) -> None:
        with self._lock:
            self._delete(self._issue_or_error(issue_key), user)

    # reads

    def issue(self, issue_key: str) -> Json:
        with self._lock:
            return copy.deepcopy(self._issue_or_error(issue_key))

    def comments(self, issue_key: str) -> list[Json]:
        with self._lock:
            return copy.deepcopy(self._comments[self._issue_or_error(issue_key)["id"]])

    def activities(self, project_key: str) -> list[Json]:
        with self._lock:
            return copy.deepcopy(self._project_or_error(project_key).activities)

    def status_id(self, project_key: str, name: str) -> int:
        with self._lock:
            return self._project_or_error(project_key).status_named(name)["id"]

    def custom_field_id(self, project_key: str, name: str) -> int:
        with self._lock:
            return self._project_or_error(project_key).field_named(name)["id"]

    # internals; the caller holds the lock

    def _projects_by_id_statuses(self) -> Iterator[Json]:
        """Every project's statuses: a new status's id is unique in the space."""
        for project in self._projects.values():
            yield from project.statuses

    def _all_custom_fields(self) -> Iterator[Json]:
        for project in self._projects.values():
            yield from project.custom_fields

    def _project_or_error(self, key: str) -> Project:
        project = self._projects.get(key)
        if project is None:
            raise KeyError(f"no project {key}")
        return project

    def _issue_or_error(self, key: str) -> Json:
        issue = self._issues.get(key)
        if issue is None:
            raise KeyError(f"no issue {key}")
        return issue

    def _find_project(self, id_or_key: str) -> Project | None:
        if id_or_key.isdigit():
            return self._projects_by_id.get(int(id_or_key))
        return self._projects.get(id_or_key)

    def _find_issue(self, id_or_key: str) -> Json | None:
        if id_or_key.isdigit():
            return self._issues_by_id.get(int(id_or_key))
        return self._issues.get(id_or_key)

    def _project_of(self, issue: Json) -> Project:
        return self._projects_by_id[issue["projectId"]]

    @staticmethod
    def _values_by_name(project: Project, values: Mapping[str, object]) -> dict[int, Any]:
        fields = {name: project.field_named(name) for name in values}
        return {d["id"]: coerce_field_value(d, values[name]) for name, d in fields.items()}

    def _create(
        self,
        project: Project,
        *,
        summary: str,
        description: str,
        status: Json,
        field_values: Mapping[int, Any],
        user: Json,
        issue_type: Json | None = None,
        priority: Json = PRIORITIES[1],
    ) -> Json:
        key_id, project.next_key_id = project.next_key_id, project.next_key_id + 1
        now = iso(utc_now())
        issue = {
            "id": next(self._issue_ids),
            "projectId": project.id,
            "issueKey": f"{project.key}-{key_id}",
            "keyId": key_id,
            "issueType": dict(issue_type or project.issue_types[0]),
            "summary": summary,
            "description": description,
            "resolution": None,
            "priority": dict(priority),
            "status": dict(status),
            "assignee": None,
            "category": [],
            "versions": [],
            "milestone": [],
            "startDate": None,
            "dueDate": None,
            "estimatedHours": None,
            "actualHours": None,
            "parentIssueId": None,
            "createdUser": dict(user),
            "created": now,
            "updatedUser": dict(user),
            "updated": now,
            "customFields": [
                {"id": d["id"], "fieldTypeId": d["typeId"], "name": d["name"], "value": None}
                for d in project.custom_fields
            ],
            "attachments": [],
            "sharedFiles": [],
            "stars": [],
        }
        for field_id, value in field_values.items():
            set_field_value(issue, field_id, value)
        self._store_issue(project, issue)
        self._record(project, 1, issue_content(issue), user)
        return issue

    def _store_issue(self, project: Project, issue: Json) -> None:
        project.index(issue)
        self._issues[issue["issueKey"]] = issue
        self._issues_by_id[issue["id"]] = issue
        self._comments[issue["id"]] = []
        self._list_cache.clear()

    def _update(self, issue: Json, edit: Edit, *, comment: str, user: Json) -> None:
        project = self._project_of(issue)
        changes = diff(project, issue, edit)
        if not changes:
            if comment:
                self._comment(issue, comment, user)
            return
        self._apply(project, issue, changes, user)
        record = self._store_comment(issue, comment or None, changes, user)
        entries = [change.webhook_entry() for change in changes]
        self._record(project, 2, commented_content(issue, record, entries), user)

    def _apply(self, project: Project, issue: Json, changes: list[Change], user: Json) -> None:
        for change in changes:
            if change.attribute is not None:
                set_field_value(issue, change.attribute["id"], change.new)
            elif change.field == "status":
                project.unindex(issue)
                issue["status"] = dict(change.new)
                project.index(issue)
            else:
                issue[change.field] = change.new
        self._stamp(issue, user)

    def _stamp(self, issue: Json, user: Json) -> None:
        issue["updated"] = iso(utc_now())
        issue["updatedUser"] = dict(user)
        self._list_cache.clear()

    def _comment(self, issue: Json, content: str, user: Json) -> Json:
        record = self._store_comment(issue, content, [], user)
        self._stamp(issue, user)
        self._record(self._project_of(issue), 3, commented_content(issue, record, []), user)
        return record

    def _store_comment(self, issue: Json, content: str | None, changes: list[Change], user: Json) -> Json:
        now = iso(utc_now())
        record = {
            "id": next(self._comment_ids),
            "projectId": issue["projectId"],
            "issueId": issue["id"],
            "content": content,
            "changeLog": [change.change_log() for change in changes],
            "createdUser": dict(user),
            "created": now,
            "updated": now,
            "stars": [],
            "notifications": [],
        }
        self._comments[issue["id"]].append(record)
        return record

    def _delete(self, issue: Json, user: Json) -> None:
        project = self._project_of(issue)
        project.unindex(issue)
        del self._issues[issue["issueKey"]]
        del self._issues_by_id[issue["id"]]
        del self._comments[issue["id"]]
        self._list_cache.clear()
        self._record(project, 4, {"id": issue["id"], "key_id": issue["keyId"]}, user)

    def _bulk_change(self, project: Project, issue: Json, status: Json, user: Json) -> Json:
        change = Change("status", issue["status"], status)
        self._apply(project, issue, [change], user)
        record = self._store_comment(issue, None, [change], user)
        return bulk_link(issue, record)

    def _record(self, project: Project, activity_type: int, content: Json, user: Json) -> None:
        activity = {
            "id": next(self._activity_ids),
            "project": dict(project.data),
            "type": activity_type,
            "content": content,
            "notifications": [],
            "createdUser": dict(user),
            "created": iso(utc_now()),
        }
        project.activities.append(activity)
        self.outbox.append(copy.deepcopy(activity))
        urls = project.webhooks_for(activity_type) if self._poster is not None else []
        body = json.dumps(activity, ensure_ascii=False).encode() if urls else b""
        for url in urls:
            self._poster.submit(url, body)

    def _select_issues(self, query: IssueQuery) -> list[Json]:
        """Matching issues in order. Cached until the next write, so paging is O(n) once."""
        selected = self._list_cache.get(query)
        if selected is None:
            key = sort_key(query.sort)
            selected = sorted(self._matching(query), key=key, reverse=query.descending)
            if len(self._list_cache) >= 32:
                self._list_cache.clear()
            self._list_cache[query] = selected
        return selected

    def _matching(self, query: IssueQuery) -> Iterator[Json]:
        if query.project_ids:
            projects = [self._projects_by_id[p] for p in query.project_ids if p in self._projects_by_id]
        else:
            projects = list(self._projects.values())
        for project in projects:
            pools = [project.issues]
            if query.status_ids:
                pools = [project.by_status.get(s, {}) for s in query.status_ids]
            for pool in pools:
                yield from (issue for issue in pool.values() if query.accepts(issue))

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

"""In-memory fake of Nulab Backlog API v2 and its project webhooks, served on loopback.

Used by the tests and by the ``sandbox`` process of ``make run``. Client code must not be
able to tell it from Backlog, so it follows Backlog's API docs (https://developer.nulab.com/docs/backlog/)
and the official client's types (``nulab/backlog-js:src/entity.ts``, ``src/types.ts``). Where Backlog's
behaviour is undocumented the fake takes the strict reading:

- ``minId`` / ``maxId`` are exclusive bounds.
- An update that only carries a comment records a type-3 activity; an update that changes
  nothing and has no comment records nothing.
- Every update also stores a comment holding its ``changeLog`` (``content`` is null when no
  text was given), as Backlog's issue history does.
- Documented parameters the fake does not model answer 400 saying so, so that no test can
  silently rely on an ignored filter. Undocumented parameters answer 400 as in Backlog.
- Custom-field entries in a webhook's ``changes[]`` use ``type: "customAttribute"`` and the
  field's name (UNCONFIRMED for Backlog; consumers re-read the issue).
- Rate-limit headers are counted but never enforced; inject 429s with ``fail_next``.

Run ``python -m sandbox.backlog --help`` for the stand-alone sandbox server.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import copy
import html
import itertools
import json
import logging
import operator
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import httpx

from sandbox._http import FakeServer, KeepAliveHandler, serve_in_thread, stop_serving

__all__ = [
    "BOT",
    "DEFAULT_CUSTOM_FIELDS",
    "DEFAULT_STATUSES",
    "HUMAN",
    "FakeBacklog",
    "RecordedRequest",
    "demo_description",
]

logger = logging.getLogger(__name__)

Json = dict[str, Any]
Params = dict[str, list[str]]

JST = timezone(timedelta(hours=9), "JST")

HUMAN: Json = {
    "id": 1001,
    "userId": "manager",
    "name": "山田 マネージャー",
    "roleType": 1,
    "lang": "ja",
    "mailAddress": "manager@example.com",
    "nulabAccount": None,
    "keyword": "manager 山田 マネージャー",
    "lastLoginTime": None,
}
"""The default actor of changes made through the UI or the Python API (a manager)."""

BOT: Json = {
    "id": 9999,
    "userId": "automedia",
    "name": "automedia",
    "roleType": 2,
    "lang": "ja",
    "mailAddress": "automedia@example.com",
    "nulabAccount": None,
    "keyword": "automedia",
    "lastLoginTime": None,
}
"""The API key's user: every write through the HTTP API is done as this user."""

DEFAULT_STATUSES: list[tuple[int, str]] = [
    (1, "未対応"),
    (2, "処理中"),
    (3, "処理済み"),
    (4, "完了"),
    (5, "automedia承認"),
    (6, "automedia実行済み"),
    (7, "automediaエラー"),
]
"""(id, name) in display order."""

DEFAULT_CUSTOM_FIELDS: list[tuple[int, str, int]] = [
    (101, "投稿日時", 1),
    (102, "自動配信実行日時", 1),
]
"""(id, name, typeId). Backlog has no date-time type, so both are Text (typeId 1)."""

PRIORITIES: list[Json] = [{"id": 2, "name": "高"}, {"id": 3, "name": "中"}, {"id": 4, "name": "低"}]

_STATUS_COLORS = {1: "#ea2c00", 2: "#4488c5", 3: "#5eb5a6", 4: "#b0be3c"}
_CUSTOM_STATUS_COLOR = "#868cb7"
_FIELD_TYPES = {1: "Text", 2: "TextArea", 3: "Numeric", 4: "Date"}
_PROJECT_KEY = re.compile(r"[A-Z0-9_]+")
_CUSTOM_FIELD_PARAM = re.compile(r"customField_(\d+)")
_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_id = operator.itemgetter("id")


# --- errors and small value helpers -------------------------------------------------------


class ApiError(Exception):
    """An answer in Backlog's error shape ``{"errors": [{"message", "code", "moreInfo"}]}``."""

    def __init__(self, status: int, message: str, code: int = 7) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def _error_body(message: str, code: int) -> Json:
    return {"errors": [{"message": message, "code": code, "moreInfo": ""}]}


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(_TIMESTAMP_FORMAT)


def _jst_day(timestamp: str) -> date:
    return datetime.strptime(timestamp, _TIMESTAMP_FORMAT).replace(tzinfo=UTC).astimezone(JST).date()


def _as_value(value: Any) -> str:
    """A webhook ``changes[]`` value: always a string, statuses as their id."""
    if value is None:
        return ""
    return str(value["id"]) if isinstance(value, dict) else str(value)


def _as_text(value: Any) -> Any:
    """A comment ``changeLog`` value: statuses by name."""
    return value["name"] if isinstance(value, dict) else value


def _coerce_field_value(definition: Json, raw: object) -> Any:
    if raw is None or raw == "":
        return None
    if definition["typeId"] == 3:
        number = float(str(raw))
        return int(number) if number.is_integer() else number
    if definition["typeId"] == 4:
        date.fromisoformat(str(raw))  # Backlog takes yyyy-MM-dd; raises ValueError otherwise
    return str(raw)


def _field_value(issue: Json, field_id: int) -> Any:
    return next(f["value"] for f in issue["customFields"] if f["id"] == field_id)


def _set_field_value(issue: Json, field_id: int, value: Any) -> None:
    next(f for f in issue["customFields"] if f["id"] == field_id)["value"] = value


def _id_window(
    items: list[Json],
    *,
    min_id: int | None,
    max_id: int | None,
    count: int,
    descending: bool,
    accept: Callable[[Json], bool] | None = None,
) -> list[Json]:
    """Up to ``count`` items with min_id < id < max_id, from the chosen end (ids ascend)."""
    low = 0 if min_id is None else bisect.bisect_right(items, min_id, key=_id)
    high = len(items) if max_id is None else bisect.bisect_left(items, max_id, key=_id)
    indices = range(high - 1, low - 1, -1) if descending else range(low, high)
    picked = (items[i] for i in indices if accept is None or accept(items[i]))
    return list(itertools.islice(picked, count))


# --- JSON builders ------------------------------------------------------------------------


def _project_json(project_id: int, key: str, name: str, order: int) -> Json:
    return {
        "id": project_id,
        "projectKey": key,
        "name": name,
        "chartEnabled": False,
        "useResolvedForChart": False,
        "subtaskingEnabled": False,
        "projectLeaderCanEditProjectLeader": False,
        "useWiki": True,
        "useFileSharing": True,
        "useWikiTreeView": True,
        "useOriginalImageSizeAtWiki": False,
        "textFormattingRule": "markdown",
        "archived": False,
        "displayOrder": order,
        "useDevAttributes": True,
    }


def _status_json(project_id: int, status_id: int, name: str, order: int) -> Json:
    color = _STATUS_COLORS.get(status_id, _CUSTOM_STATUS_COLOR)
    return {
        "id": status_id,
        "projectId": project_id,
        "name": name,
        "color": color,
        "displayOrder": (order + 1) * 1000,
    }


def _custom_field_json(project_id: int, spec: tuple[int, str, int], order: int) -> Json:
    field_id, name, type_id = spec
    if type_id not in _FIELD_TYPES:
        raise ValueError(f"custom field typeId {type_id} is not supported by the fake")
    return {
        "id": field_id,
        "projectId": project_id,
        "typeId": type_id,
        "version": None,
        "name": name,
        "description": "",
        "required": False,
        "useIssueType": False,
        "applicableIssueTypes": [],
        "displayOrder": order,
    }


def _issue_content(issue: Json) -> Json:
    return {
        "id": issue["id"],
        "key_id": issue["keyId"],
        "summary": issue["summary"],
        "description": issue["description"],
    }


def _commented_content(issue: Json, comment: Json, changes: list[Json]) -> Json:
    """Content of type 2 and 3 activities."""
    return _issue_content(issue) | {
        "comment": {"id": comment["id"], "content": comment["content"] or ""},
        "changes": changes,
        "attachments": [],
        "shared_files": [],
        "external_file_links": [],
    }


# --- domain records -----------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the fake served, for assertions."""

    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    status: int


@dataclass
class _Fault:
    status: int
    count: int
    method: str | None
    path_prefix: str | None
    headers: dict[str, str]
    body: Json | None
    delay: float

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method.upper() != method:
            return False
        return self.path_prefix is None or path.startswith(self.path_prefix)


@dataclass
class _Project:
    data: Json
    statuses: list[Json]
    custom_fields: list[Json]
    issue_types: list[Json]
    webhook_url: str | None = None
    next_key_id: int = 1
    issues: dict[int, Json] = field(default_factory=dict)
    by_status: dict[int, dict[int, Json]] = field(default_factory=dict)
    activities: list[Json] = field(default_factory=list)

    @property
    def id(self) -> int:
        return self.data["id"]

    @property
    def key(self) -> str:
        return self.data["projectKey"]

    def status_named(self, name: str) -> Json:
        for status in self.statuses:
            if status["name"] == name:
                return status
        raise KeyError(f"project {self.key} has no status {name!r}")

    def status_with_id(self, status_id: int) -> Json | None:
        return next((s for s in self.statuses if s["id"] == status_id), None)

    def field_named(self, name: str) -> Json:
        for definition in self.custom_fields:
            if definition["name"] == name:
                return definition
        raise KeyError(f"project {self.key} has no custom field {name!r}")

    def field_with_id(self, field_id: int) -> Json | None:
        return next((d for d in self.custom_fields if d["id"] == field_id), None)

    def index(self, issue: Json) -> None:
        self.issues[issue["id"]] = issue
        self.by_status.setdefault(issue["status"]["id"], {})[issue["id"]] = issue

    def unindex(self, issue: Json) -> None:
        del self.issues[issue["id"]]
        del self.by_status[issue["status"]["id"]][issue["id"]]


@dataclass(frozen=True)
class _Edit:
    """The fields one update sets; None leaves a field alone."""

    status: Json | None = None
    summary: str | None = None
    description: str | None = None
    field_values: Mapping[int, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Change:
    field: str  # "status", "summary", "description" or a custom field's name
    old: Any
    new: Any
    attribute: Json | None = None  # the custom field's definition

    def webhook_entry(self) -> Json:
        entry = {
            "field": self.field,
            "new_value": _as_value(self.new),
            "old_value": _as_value(self.old),
        }
        if self.attribute is None:
            return entry | {"type": "standard"}
        return entry | {"field_text": self.field, "type": "customAttribute"}

    def change_log(self) -> Json:
        info = None
        if self.attribute is not None:
            info = {"id": self.attribute["id"], "typeId": self.attribute["typeId"]}
        return {
            "field": self.field,
            "newValue": _as_text(self.new),
            "originalValue": _as_text(self.old),
            "attachmentInfo": None,
            "attributeInfo": info,
            "notificationInfo": None,
        }


def _diff(project: _Project, issue: Json, edit: _Edit) -> list[_Change]:
    changes = []
    if edit.status is not None and edit.status["id"] != issue["status"]["id"]:
        changes.append(_Change("status", issue["status"], edit.status))
    for name, new in (("summary", edit.summary), ("description", edit.description)):
        if new is not None and new != issue[name]:
            changes.append(_Change(name, issue[name], new))
    for field_id, new in edit.field_values.items():
        old = _field_value(issue, field_id)
        if new != old:
            definition = project.field_with_id(field_id)
            assert definition is not None
            changes.append(_Change(definition["name"], old, new, definition))
    return changes


_SORT_KEYS = frozenset(
    "issueType category version milestone summary status priority attachment sharedFile created"
    " createdUser updated updatedUser assignee startDate dueDate estimatedHours actualHours"
    " childIssue".split()
)


def _sort_key(sort: str) -> Callable[[Json], tuple[Any, ...]]:
    """Backlog's documented sort keys; those the fake does not model sort by id alone."""
    if sort in ("created", "updated", "summary"):
        return lambda issue: (issue[sort], issue["id"])
    if sort in ("status", "issueType"):
        return lambda issue: (issue[sort]["displayOrder"], issue["id"])
    if sort in ("priority", "createdUser", "updatedUser"):
        return lambda issue: (issue[sort]["id"], issue["id"])
    match = _CUSTOM_FIELD_PARAM.fullmatch(sort)
    if match:
        field_id = int(match.group(1))
        return lambda issue: (str(_field_value(issue, field_id) or ""), issue["id"])
    return lambda issue: (issue["id"],)


@dataclass(frozen=True)
class _IssueQuery:
    project_ids: tuple[int, ...] = ()
    status_ids: tuple[int, ...] = ()
    issue_ids: frozenset[int] = frozenset()
    keyword: str = ""
    date_bounds: tuple[tuple[str, date | None, date | None], ...] = ()
    sort: str = "updated"
    descending: bool = True

    def accepts(self, issue: Json) -> bool:
        if self.issue_ids and issue["id"] not in self.issue_ids:
            return False
        if self.keyword and not self._mentions_keyword(issue):
            return False
        return all(self._within(issue[name], *bounds) for name, *bounds in self.date_bounds)

    def _mentions_keyword(self, issue: Json) -> bool:
        return self.keyword in f"{issue['summary']}\n{issue['description']}".casefold()

    @staticmethod
    def _within(timestamp: str, since: date | None, until: date | None) -> bool:
        # Backlog filters by day only, in the space's time zone (JST here).
        day = _jst_day(timestamp)
        return (since is None or day >= since) and (until is None or day <= until)


# --- the fake -----------------------------------------------------------------------------


class FakeBacklog:
    """A Backlog space with projects, issues, comments, activities and webhooks, in memory.

    Writes through the Python methods act as ``user`` (HUMAN by default); writes through the
    HTTP API act as BOT. Every write records one activity, appends it to ``outbox`` and, in
    ``webhook_mode="post"``, queues it for the project's webhook URL.
    """

    rate_limit_per_minute = 600
    """X-RateLimit-Limit; counted per minute and request group but never enforced."""

    def __init__(
        self,
        *,
        api_key: str = "test-api-key",
        host: str = "127.0.0.1",
        port: int = 0,
        webhook_mode: str = "collect",
    ) -> None:
        if webhook_mode not in ("collect", "post"):
            raise ValueError("webhook_mode must be 'collect' or 'post'")
        self.api_key = api_key
        self.webhook_mode = webhook_mode
        self.requests: list[RecordedRequest] = []
        self.outbox: list[Json] = []
        self._address = (host, port)
        self._lock = threading.RLock()
        self._server: FakeServer | None = None
        self._thread: threading.Thread | None = None
        self._poster = _WebhookPoster() if webhook_mode == "post" else None
        self._limiter = _RateLimiter(self.rate_limit_per_minute)
        self._faults: list[_Fault] = []
        self._projects: dict[str, _Project] = {}
        self._projects_by_id: dict[int, _Project] = {}
        self._issues: dict[str, Json] = {}
        self._issues_by_id: dict[int, Json] = {}
        self._comments: dict[int, list[Json]] = {}
        self._list_cache: dict[_IssueQuery, list[Json]] = {}
        # Distinct ranges so that an id used as a key_id (or the reverse) is caught.
        self._issue_ids = itertools.count(10_001)
        self._comment_ids = itertools.count(50_001)
        self._activity_ids = itertools.count(1)
        self._tx_ids = itertools.count(1)
        self._issue_type_ids = itertools.count(1)
        self._api = _Api(self)
        self._ui = _Ui(self)

    # lifecycle

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeBacklog is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeBacklog:
        if self._server is not None:
            return self
        self._server, self._thread = serve_in_thread(self._address, self, _RequestHandler, "fake-backlog")
        if self._poster is not None:
            self._poster.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        stop_serving(server, self._thread)
        if self._poster is not None:
            self._poster.stop()

    def __enter__(self) -> FakeBacklog:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

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
        if not _PROJECT_KEY.fullmatch(key):
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
    ) -> _Project:
        issue_type = {
            "id": next(self._issue_type_ids),
            "projectId": pid,
            "name": "タスク",
            "color": "#7ea800",
            "displayOrder": 0,
        }
        return _Project(
            data=_project_json(pid, key, name, len(self._projects)),
            statuses=[_status_json(pid, sid, sname, i) for i, (sid, sname) in enumerate(statuses)],
            custom_fields=[_custom_field_json(pid, spec, i) for i, spec in enumerate(custom_fields)],
            issue_types=[issue_type],
        )

    def set_webhook(self, project_key: str, url: str | None) -> None:
        with self._lock:
            self._project_or_error(project_key).webhook_url = url

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
        fault = _Fault(status, count, method, path_prefix, dict(headers or {}), body, delay)
        with self._lock:
            self._faults.append(fault)

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
            edit = _Edit(
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

    def bulk_update(self, issue_keys: list[str], *, status: str, user: Json = HUMAN) -> None:
        """Backlog's bulk edit: one type-14 activity listing every issue in content.link[]."""
        with self._lock:
            issues = [self._issue_or_error(key) for key in issue_keys]
            if len({issue["projectId"] for issue in issues}) != 1:
                raise ValueError("bulk_update needs issues of exactly one project")
            project = self._project_of(issues[0])
            new_status = project.status_named(status)
            links = [self._bulk_change(project, issue, new_status, user) for issue in issues]
            content = {
                "tx_id": next(self._tx_ids),
                "comment": {"content": ""},
                "link": links,
                "changes": [{"field": "status", "new_value": str(new_status["id"]), "type": "standard"}],
            }
            self._record(project, 14, content, user)

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

    def _project_or_error(self, key: str) -> _Project:
        project = self._projects.get(key)
        if project is None:
            raise KeyError(f"no project {key}")
        return project

    def _issue_or_error(self, key: str) -> Json:
        issue = self._issues.get(key)
        if issue is None:
            raise KeyError(f"no issue {key}")
        return issue

    def _find_project(self, id_or_key: str) -> _Project | None:
        if id_or_key.isdigit():
            return self._projects_by_id.get(int(id_or_key))
        return self._projects.get(id_or_key)

    def _find_issue(self, id_or_key: str) -> Json | None:
        if id_or_key.isdigit():
            return self._issues_by_id.get(int(id_or_key))
        return self._issues.get(id_or_key)

    def _project_of(self, issue: Json) -> _Project:
        return self._projects_by_id[issue["projectId"]]

    @staticmethod
    def _values_by_name(project: _Project, values: Mapping[str, object]) -> dict[int, Any]:
        fields = {name: project.field_named(name) for name in values}
        return {d["id"]: _coerce_field_value(d, values[name]) for name, d in fields.items()}

    def _create(
        self,
        project: _Project,
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
        now = _iso(_now())
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
            _set_field_value(issue, field_id, value)
        self._store_issue(project, issue)
        self._record(project, 1, _issue_content(issue), user)
        return issue

    def _store_issue(self, project: _Project, issue: Json) -> None:
        project.index(issue)
        self._issues[issue["issueKey"]] = issue
        self._issues_by_id[issue["id"]] = issue
        self._comments[issue["id"]] = []
        self._list_cache.clear()

    def _update(self, issue: Json, edit: _Edit, *, comment: str, user: Json) -> None:
        project = self._project_of(issue)
        changes = _diff(project, issue, edit)
        if not changes:
            if comment:
                self._comment(issue, comment, user)
            return
        self._apply(project, issue, changes, user)
        record = self._store_comment(issue, comment or None, changes, user)
        entries = [change.webhook_entry() for change in changes]
        self._record(project, 2, _commented_content(issue, record, entries), user)

    def _apply(self, project: _Project, issue: Json, changes: list[_Change], user: Json) -> None:
        for change in changes:
            if change.attribute is not None:
                _set_field_value(issue, change.attribute["id"], change.new)
            elif change.field == "status":
                project.unindex(issue)
                issue["status"] = dict(change.new)
                project.index(issue)
            else:
                issue[change.field] = change.new
        self._stamp(issue, user)

    def _stamp(self, issue: Json, user: Json) -> None:
        issue["updated"] = _iso(_now())
        issue["updatedUser"] = dict(user)
        self._list_cache.clear()

    def _comment(self, issue: Json, content: str, user: Json) -> Json:
        record = self._store_comment(issue, content, [], user)
        self._stamp(issue, user)
        self._record(self._project_of(issue), 3, _commented_content(issue, record, []), user)
        return record

    def _store_comment(self, issue: Json, content: str | None, changes: list[_Change], user: Json) -> Json:
        now = _iso(_now())
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

    def _bulk_change(self, project: _Project, issue: Json, status: Json, user: Json) -> Json:
        change = _Change("status", issue["status"], status)
        self._apply(project, issue, [change], user)
        record = self._store_comment(issue, None, [change], user)
        return {
            "id": issue["id"],
            "key_id": issue["keyId"],
            "title": issue["summary"],
            "comment": {"id": record["id"], "content": ""},
        }

    def _record(self, project: _Project, activity_type: int, content: Json, user: Json) -> None:
        activity = {
            "id": next(self._activity_ids),
            "project": dict(project.data),
            "type": activity_type,
            "content": content,
            "notifications": [],
            "createdUser": dict(user),
            "created": _iso(_now()),
        }
        project.activities.append(activity)
        self.outbox.append(copy.deepcopy(activity))
        if self._poster is not None and project.webhook_url:
            body = json.dumps(activity, ensure_ascii=False).encode()
            self._poster.submit(project.webhook_url, body)

    def _select_issues(self, query: _IssueQuery) -> list[Json]:
        """Matching issues in order. Cached until the next write, so paging is O(n) once."""
        selected = self._list_cache.get(query)
        if selected is None:
            key = _sort_key(query.sort)
            selected = sorted(self._matching(query), key=key, reverse=query.descending)
            if len(self._list_cache) >= 32:
                self._list_cache.clear()
            self._list_cache[query] = selected
        return selected

    def _matching(self, query: _IssueQuery) -> Iterator[Json]:
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

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def _handle(self, request: _Request) -> _Response:
        try:
            handler = self._api if request.path.startswith("/api/") else self._ui
            response = handler.handle(request)
        except Exception:
            logger.exception("fake Backlog failed on %s %s", request.method, request.path)
            response = _json_response(500, _error_body("Internal error.", 1))
        recorded = RecordedRequest(request.method, request.path, request.query, request.form, response.status)
        with self._lock:
            self.requests.append(recorded)
        return response


# --- HTTP plumbing ------------------------------------------------------------------------


@dataclass
class _Request:
    method: str
    path: str
    query: Params
    form: Params

    @property
    def params(self) -> Params:
        """Query and body parameters together (servlet semantics), without apiKey."""
        merged = {name: list(values) for name, values in self.query.items() if name != "apiKey"}
        for name, values in self.form.items():
            merged.setdefault(name, []).extend(values)
        return merged


@dataclass
class _Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json;charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def _json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Response:
    body = json.dumps(payload, ensure_ascii=False).encode()
    return _Response(status, body, headers=dict(headers or {}))


def _html_response(text: str, status: int = 200) -> _Response:
    return _Response(status, text.encode(), "text/html; charset=utf-8")


def _redirect(location: str) -> _Response:
    return _Response(303, b"", "text/plain; charset=utf-8", {"Location": location})


_Route = tuple[str, re.Pattern[str], Callable[..., Any]]


def _resolve(routes: Sequence[_Route], method: str, path: str) -> tuple[Callable[..., Any], Params]:
    path_known = False
    for route_method, pattern, handler in routes:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        if route_method == method:
            return handler, {name: unquote(value) for name, value in match.groupdict().items()}
        path_known = True
    if path_known:
        raise ApiError(405, "Method not allowed.")
    raise ApiError(404, "Not Found.", 6)


class _RateLimiter:
    """Backlog's X-RateLimit-* headers, per minute and per group (read = GET, update = rest)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._window = 0
        self._used: dict[str, int] = {}

    def headers(self, method: str) -> dict[str, str]:
        window = int(time.time()) // 60
        if window != self._window:
            self._window, self._used = window, {}
        group = "read" if method == "GET" else "update"
        used = self._used[group] = self._used.get(group, 0) + 1
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.limit - used, 0)),
            "X-RateLimit-Reset": str((window + 1) * 60),
        }


class _RequestHandler(KeepAliveHandler):
    server_version = "fake-backlog/1"
    server: FakeServer

    def _serve(self) -> None:
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        request = _Request(self.command, split.path, query, self._read_form())
        self._send(self.server.fake._handle(request))

    def _read_form(self) -> Params:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        if not self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            return {}
        return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)

    def _send(self, response: _Response) -> None:
        try:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up, e.g. during an injected delay

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class _WebhookPoster:
    """POSTs webhook bodies in order from one thread; failures are logged and dropped, as
    Backlog documents no retry."""

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout
        self._queue: queue.Queue[tuple[str, bytes] | None] = queue.Queue()
        self._idle = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fake-backlog-webhooks", daemon=True)
        self._thread.start()

    def submit(self, url: str, body: bytes) -> None:
        with self._idle:
            self._pending += 1
        self._queue.put((url, body))

    def flush(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        with httpx.Client(timeout=self._timeout, headers={"User-Agent": "fake-backlog"}) as client:
            while (item := self._queue.get()) is not None:
                self._deliver(client, *item)
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    @staticmethod
    def _deliver(client: httpx.Client, url: str, body: bytes) -> None:
        host = urlsplit(url).netloc  # the path may carry the receiver's secret token
        headers = {"Content-Type": "application/json; charset=utf-8"}
        try:
            response = client.post(url, content=body, headers=headers)
        except httpx.HTTPError as error:
            logger.warning("webhook to %s failed: %s", host, error)
            return
        if response.is_error:
            logger.warning("webhook to %s answered %s", host, response.status_code)


# --- API v2 -------------------------------------------------------------------------------


def _one(params: Params, name: str) -> str | None:
    values = params.get(name)
    return values[0] if values else None


def _int(raw: str, name: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"'{name}' must be a number.") from None


def _ints(params: Params, name: str) -> tuple[int, ...]:
    return tuple(sorted({_int(raw, name) for raw in params.get(name, [])}))


def _int_param(params: Params, name: str) -> int | None:
    raw = _one(params, name)
    return None if raw is None else _int(raw, name)


def _ranged(params: Params, name: str, default: int, low: int, high: int | None = None) -> int:
    value = _int_param(params, name)
    if value is None:
        return default
    if value < low or (high is not None and value > high):
        upper = f" and {high} or less" if high is not None else ""
        raise ApiError(400, f"'{name}' must be {low} or more{upper}.")
    return value


def _count(params: Params) -> int:
    return _ranged(params, "count", 20, 1, 100)


def _descending(params: Params) -> bool:
    order = _one(params, "order") or "desc"
    if order not in ("asc", "desc"):
        raise ApiError(400, "'order' must be 'asc' or 'desc'.")
    return order == "desc"


def _required(params: Params, name: str) -> str:
    value = _one(params, name)
    if value is None or not value.strip():
        raise ApiError(400, f"'{name}' is required.")
    return value


def _reject_unknown(
    params: Params,
    allowed: frozenset[str] = frozenset(),
    unmodelled: frozenset[str] = frozenset(),
    *,
    custom_fields: bool = False,
) -> None:
    """Backlog answers 400 to any parameter it does not document."""
    for name in params:
        if name in allowed or (custom_fields and _CUSTOM_FIELD_PARAM.fullmatch(name)):
            continue
        if name in unmodelled or _CUSTOM_FIELD_PARAM.match(name):
            raise ApiError(400, f"The fake Backlog does not implement the parameter '{name}'.")
        raise ApiError(400, f"Undefined parameter '{name}'.")


_LIST_PARAMS = frozenset(
    "projectId[] statusId[] id[] keyword createdSince createdUntil updatedSince updatedUntil"
    " sort order offset count".split()
)
_LIST_UNMODELLED = frozenset(
    "issueTypeId[] categoryId[] versionId[] milestoneId[] priorityId[] assigneeId[]"
    " createdUserId[] resolutionId[] parentChild attachment sharedFile parentIssueId[]"
    " startDateSince startDateUntil dueDateSince dueDateUntil hasDueDate".split()
)
_PATCH_PARAMS = frozenset("summary description statusId comment notifiedUserId[]".split())
_PATCH_UNMODELLED = frozenset(
    "parentIssueId resolutionId startDate dueDate estimatedHours actualHours issueTypeId"
    " categoryId[] versionId[] milestoneId[] priorityId assigneeId attachmentId[]".split()
)
_CREATE_PARAMS = frozenset("projectId summary issueTypeId priorityId description notifiedUserId[]".split())
_CREATE_UNMODELLED = frozenset(
    "parentIssueId startDate dueDate estimatedHours actualHours categoryId[] versionId[]"
    " milestoneId[] assigneeId attachmentId[]".split()
)
_WINDOW_PARAMS = frozenset({"minId", "maxId", "count", "order"})

_FAULT_ERRORS = {
    401: ("Authentication failure.", 11),
    403: ("Unauthorized operation.", 5),
    404: ("No resource.", 6),
    429: ("Too many requests.", 13),
}


def _issue_query(params: Params) -> _IssueQuery:
    _reject_unknown(params, _LIST_PARAMS, _LIST_UNMODELLED)
    sort = _one(params, "sort") or "updated"
    if sort not in _SORT_KEYS and not _CUSTOM_FIELD_PARAM.fullmatch(sort):
        raise ApiError(400, f"'sort' does not accept '{sort}'.")
    return _IssueQuery(
        project_ids=_ints(params, "projectId[]"),
        status_ids=_ints(params, "statusId[]"),
        issue_ids=frozenset(_ints(params, "id[]")),
        keyword=(_one(params, "keyword") or "").casefold(),
        date_bounds=_date_bounds(params),
        sort=sort,
        descending=_descending(params),
    )


def _date_bounds(params: Params) -> tuple[tuple[str, date | None, date | None], ...]:
    bounds = []
    for name in ("created", "updated"):
        since, until = _date_param(params, f"{name}Since"), _date_param(params, f"{name}Until")
        if since or until:
            bounds.append((name, since, until))
    return tuple(bounds)


def _date_param(params: Params, name: str) -> date | None:
    raw = _one(params, name)
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        raise ApiError(400, f"'{name}' must be yyyy-MM-dd.") from None


def _fault_response(fault: _Fault) -> _Response:
    message, code = _FAULT_ERRORS.get(fault.status, ("Internal error.", 1))
    if 400 <= fault.status < 500 and fault.status not in _FAULT_ERRORS:
        message, code = "Invalid request.", 7
    headers = {}
    if fault.status == 429:
        headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 60)}
    body = fault.body if fault.body is not None else _error_body(message, code)
    return _json_response(fault.status, body, headers | fault.headers)


class _Api:
    """Backlog API v2 over HTTP: trailing slash, apiKey, injected faults, then the route."""

    def __init__(self, fake: FakeBacklog) -> None:
        self._fake = fake
        project = r"/api/v2/projects/(?P<project>[^/]+)"
        issue = r"/api/v2/issues/(?P<issue>[^/]+)"
        table = [
            ("GET", r"/api/v2/users/myself", self.myself),
            ("GET", r"/api/v2/priorities", self.priorities),
            ("GET", project, self.project),
            ("GET", project + "/statuses", self.statuses),
            ("GET", project + "/customFields", self.custom_fields),
            ("GET", project + "/issueTypes", self.issue_types),
            ("GET", project + "/activities", self.activities),
            ("GET", r"/api/v2/issues", self.list_issues),
            ("POST", r"/api/v2/issues", self.create_issue),
            ("GET", r"/api/v2/issues/count", self.count_issues),
            ("GET", issue, self.get_issue),
            ("PATCH", issue, self.patch_issue),
            ("DELETE", issue, self.delete_issue),
            ("GET", issue + "/comments", self.list_comments),
            ("POST", issue + "/comments", self.add_comment),
            ("GET", issue + r"/comments/(?P<comment>[^/]+)", self.get_comment),
        ]
        self._routes = [(method, re.compile(path), handler) for method, path, handler in table]

    def handle(self, request: _Request) -> _Response:
        try:
            response = self._serve(request)
        except ApiError as error:
            response = _json_response(error.status, _error_body(error.message, error.code))
        with self._fake._lock:
            limits = self._fake._limiter.headers(request.method)
        response.headers = limits | response.headers
        return response

    def _serve(self, request: _Request) -> _Response:
        if request.path.endswith("/"):
            raise ApiError(404, "Not Found.", 6)  # Backlog rejects a trailing slash
        if request.query.get("apiKey") != [self._fake.api_key]:
            raise ApiError(401, "Authentication failure.", 11)
        fault = self._fake._take_fault(request.method, request.path)
        if fault is not None:
            time.sleep(fault.delay)
            if fault.status >= 400:
                return _fault_response(fault)
        handler, groups = _resolve(self._routes, request.method, request.path)
        with self._fake._lock:
            status, payload = handler(request.params, **groups)
            return _json_response(status, payload)

    # lookups

    def _project(self, id_or_key: str) -> _Project:
        project = self._fake._find_project(id_or_key)
        if project is None:
            raise ApiError(404, "No project.", 6)
        return project

    def _issue(self, id_or_key: str) -> Json:
        issue = self._fake._find_issue(id_or_key)
        if issue is None:
            raise ApiError(404, "No issue.", 6)
        return issue

    # users, projects

    def myself(self, params: Params) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, BOT

    def priorities(self, params: Params) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, PRIORITIES

    def project(self, params: Params, project: str) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, self._project(project).data

    def statuses(self, params: Params, project: str) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, self._project(project).statuses

    def custom_fields(self, params: Params, project: str) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, self._project(project).custom_fields

    def issue_types(self, params: Params, project: str) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, self._project(project).issue_types

    def activities(self, params: Params, project: str) -> tuple[int, Any]:
        _reject_unknown(params, _WINDOW_PARAMS | {"activityTypeId[]"})
        types = set(_ints(params, "activityTypeId[]"))
        page = _id_window(
            self._project(project).activities,
            min_id=_int_param(params, "minId"),
            max_id=_int_param(params, "maxId"),
            count=_count(params),
            descending=_descending(params),
            accept=(lambda activity: activity["type"] in types) if types else None,
        )
        return 200, page

    # issues

    def list_issues(self, params: Params) -> tuple[int, Any]:
        query = _issue_query(params)
        offset = _ranged(params, "offset", 0, 0)
        count = _count(params)
        return 200, self._fake._select_issues(query)[offset : offset + count]

    def count_issues(self, params: Params) -> tuple[int, Any]:
        return 200, {"count": len(self._fake._select_issues(_issue_query(params)))}

    def get_issue(self, params: Params, issue: str) -> tuple[int, Any]:
        _reject_unknown(params)
        return 200, self._issue(issue)

    def create_issue(self, params: Params) -> tuple[int, Any]:
        _reject_unknown(params, _CREATE_PARAMS, _CREATE_UNMODELLED, custom_fields=True)
        project = self._fake._projects_by_id.get(_int(_required(params, "projectId"), "projectId"))
        if project is None:
            raise ApiError(404, "No project.", 6)
        issue = self._fake._create(
            project,
            summary=_required(params, "summary"),
            description=_one(params, "description") or "",
            status=project.statuses[0],
            field_values=self._field_params(project, params),
            user=BOT,
            issue_type=self._issue_type_param(project, params),
            priority=self._priority_param(params),
        )
        return 201, issue

    def patch_issue(self, params: Params, issue: str) -> tuple[int, Any]:
        _reject_unknown(params, _PATCH_PARAMS, _PATCH_UNMODELLED, custom_fields=True)
        found = self._issue(issue)
        project = self._fake._project_of(found)
        if "summary" in params:
            _required(params, "summary")
        edit = _Edit(
            status=self._status_param(project, params),
            summary=_one(params, "summary"),
            description=_one(params, "description"),
            field_values=self._field_params(project, params),
        )
        self._fake._update(found, edit, comment=_one(params, "comment") or "", user=BOT)
        return 200, found

    def delete_issue(self, params: Params, issue: str) -> tuple[int, Any]:
        _reject_unknown(params)
        found = self._issue(issue)
        self._fake._delete(found, BOT)
        return 200, found

    # comments

    def list_comments(self, params: Params, issue: str) -> tuple[int, Any]:
        _reject_unknown(params, _WINDOW_PARAMS)
        page = _id_window(
            self._fake._comments[self._issue(issue)["id"]],
            min_id=_int_param(params, "minId"),
            max_id=_int_param(params, "maxId"),
            count=_count(params),
            descending=_descending(params),
        )
        return 200, page

    def get_comment(self, params: Params, issue: str, comment: str) -> tuple[int, Any]:
        """https://developer.nulab.com/docs/backlog/api/2/get-comment: only a comment of
        that issue (404 otherwise)."""
        _reject_unknown(params)
        comment_id = _int(comment, "commentId")
        found = next(
            (c for c in self._fake._comments[self._issue(issue)["id"]] if c["id"] == comment_id), None
        )
        if found is None:
            raise ApiError(404, "No comment.", 6)
        return 200, found

    def add_comment(self, params: Params, issue: str) -> tuple[int, Any]:
        allowed = frozenset({"content", "notifiedUserId[]"})
        _reject_unknown(params, allowed, frozenset({"attachmentId[]"}))
        found = self._issue(issue)
        return 201, self._fake._comment(found, _required(params, "content"), BOT)

    # parameter parsing that needs the project

    @staticmethod
    def _status_param(project: _Project, params: Params) -> Json | None:
        raw = _one(params, "statusId")
        if raw is None:
            return None
        status = project.status_with_id(_int(raw, "statusId"))
        if status is None:
            raise ApiError(400, f"No status with id {raw} in project {project.key}.")
        return status

    @staticmethod
    def _field_params(project: _Project, params: Params) -> dict[int, Any]:
        values = {}
        for name, raws in params.items():
            match = _CUSTOM_FIELD_PARAM.fullmatch(name)
            if match is None:
                continue
            definition = project.field_with_id(int(match.group(1)))
            if definition is None:
                raise ApiError(400, f"No custom field {match.group(1)} in project {project.key}.")
            try:
                values[definition["id"]] = _coerce_field_value(definition, raws[0])
            except ValueError:
                raise ApiError(400, f"Invalid value for '{name}'.") from None
        return values

    @staticmethod
    def _issue_type_param(project: _Project, params: Params) -> Json:
        type_id = _int(_required(params, "issueTypeId"), "issueTypeId")
        issue_type = next((t for t in project.issue_types if t["id"] == type_id), None)
        if issue_type is None:
            raise ApiError(400, f"No issue type {type_id} in project {project.key}.")
        return issue_type

    @staticmethod
    def _priority_param(params: Params) -> Json:
        priority_id = _int(_required(params, "priorityId"), "priorityId")
        priority = next((p for p in PRIORITIES if p["id"] == priority_id), None)
        if priority is None:
            raise ApiError(400, f"No priority {priority_id}.")
        return priority


# --- the sandbox UI -----------------------------------------------------------------------

_DESCRIPTION_TEMPLATE = """\
## 配信メタ
- チャネル: LINE
- 投稿日時: {when} (JST)
- 対象タグ: tag:active, !tag:opt_out
- テンプレ: announce_open

## 文面 / 変数
- date: {day}
- hours: 7:00-18:00

## 添付
- 画像: なし
"""

_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
form.inline { display: inline; }
textarea { font-family: monospace; }
label { display: block; margin: .4em 0; }
.muted { color: #777; }
pre { background: #f8f8f8; padding: .6em; }
"""

_UI_LIMIT = 50
_POSTING_TIME = "投稿日時"


def demo_description(publish_at: datetime) -> str:
    """The seed's issue body, publishing at ``publish_at`` (shown in JST)."""
    local = publish_at.astimezone(JST)
    return _DESCRIPTION_TEMPLATE.format(when=local.strftime("%Y-%m-%d %H:%M"), day=local.strftime("%Y-%m-%d"))


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="ja"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>"
    )


def _status_form(issue: Json, project: _Project) -> str:
    options = "".join(
        f'<option value="{_esc(s["name"])}"'
        f"{' selected' if s['id'] == issue['status']['id'] else ''}>{_esc(s['name'])}</option>"
        for s in project.statuses
    )
    action = f"/ui/issues/{quote(issue['issueKey'])}/status"
    return (
        f'<form class="inline" method="post" action="{action}">'
        f'<select name="status">{options}</select> <button>変更</button></form>'
    )


def _change_text(entry: Json) -> str:
    return f"{_esc(entry['field'])}: {_esc(entry['originalValue'])} → {_esc(entry['newValue'])}"


class _Ui:
    """A small Japanese page to click through the demo; acts as HUMAN and fires webhooks."""

    def __init__(self, fake: FakeBacklog) -> None:
        self._fake = fake
        issue = r"/ui/issues/(?P<key>[^/]+)"
        table = [
            ("GET", r"/", self.index),
            ("GET", issue, self.issue_page),
            ("POST", issue + "/status", self.change_status),
            ("POST", issue + "/comments", self.add_comment),
            ("POST", r"/ui/projects/(?P<key>[^/]+)/issues", self.create_issue),
        ]
        self._routes = [(method, re.compile(path), handler) for method, path, handler in table]

    def handle(self, request: _Request) -> _Response:
        try:
            handler, groups = _resolve(self._routes, request.method, request.path)
            return handler(request.form, **groups)
        except ApiError as error:
            return _html_response(_page("エラー", f"<p>{_esc(error.message)}</p>"), error.status)
        except (KeyError, ValueError) as error:
            body = f'<p>{_esc(error)}</p><p><a href="/">戻る</a></p>'
            return _html_response(_page("エラー", body), 400)

    # pages

    def index(self, form: Params) -> _Response:
        publish_at = _now() + timedelta(minutes=2)
        with self._fake._lock:
            sections = [self._section(p, publish_at) for p in self._fake._projects.values()]
        body = (
            "<h1>Backlog サンドボックス</h1>"
            '<p class="muted">automedia の動作確認用の偽 Backlog です。'
            "ここでの操作は「山田 マネージャー」として記録され、Webhook が送られます。</p>"
            + ("".join(sections) or "<p>プロジェクトがありません。</p>")
        )
        return _html_response(_page("Backlog サンドボックス", body))

    def issue_page(self, form: Params, key: str) -> _Response:
        with self._fake._lock:
            issue = self._fake._issue_or_error(key)
            project = self._fake._project_of(issue)
            body = self._issue_body(issue, project, self._fake._comments[issue["id"]])
        return _html_response(_page(f"{key} {issue['summary']}", body))

    # form posts

    def change_status(self, form: Params, key: str) -> _Response:
        self._fake.update_issue(key, status=_one(form, "status") or "")
        return _redirect("/")

    def add_comment(self, form: Params, key: str) -> _Response:
        self._fake.add_comment(key, _one(form, "content") or "")
        return _redirect(f"/ui/issues/{quote(key)}")

    def create_issue(self, form: Params, key: str) -> _Response:
        posting_time = (_one(form, "posting_time") or "").strip()
        self._fake.create_issue(
            key,
            summary=(_one(form, "summary") or "").strip() or "(件名なし)",
            description=(_one(form, "description") or "").replace("\r\n", "\n"),
            custom_fields={_POSTING_TIME: posting_time} if posting_time else None,
        )
        return _redirect("/")

    # fragments; the caller holds the lock

    def _section(self, project: _Project, publish_at: datetime) -> str:
        issues = list(project.issues.values())[-_UI_LIMIT:][::-1]
        has_posting_time = any(d["name"] == _POSTING_TIME for d in project.custom_fields)
        rows = "".join(self._row(issue, project, has_posting_time) for issue in issues)
        more = len(project.issues) - len(issues)
        note = f'<p class="muted">ほか {more} 件は省略しています。</p>' if more > 0 else ""
        webhook = _esc(project.webhook_url or "未設定")
        return (
            f"<section><h2>{_esc(project.data['name'])} ({_esc(project.key)})</h2>"
            f'<p class="muted">Webhook: {webhook}</p>'
            "<table><thead><tr><th>キー</th><th>件名</th><th>状態</th><th>投稿日時</th>"
            f"<th>状態の変更</th></tr></thead><tbody>{rows}</tbody></table>{note}"
            f"{self._create_form(project, publish_at, has_posting_time)}</section>"
        )

    @staticmethod
    def _row(issue: Json, project: _Project, has_posting_time: bool) -> str:
        posting_time = ""
        if has_posting_time:
            posting_time = _field_value(issue, project.field_named(_POSTING_TIME)["id"])
        key = issue["issueKey"]
        return (
            f'<tr><td><a href="/ui/issues/{quote(key)}">{_esc(key)}</a></td>'
            f"<td>{_esc(issue['summary'])}</td><td>{_esc(issue['status']['name'])}</td>"
            f"<td>{_esc(posting_time)}</td><td>{_status_form(issue, project)}</td></tr>"
        )

    @staticmethod
    def _create_form(project: _Project, publish_at: datetime, has_posting_time: bool) -> str:
        field_input = ""
        if has_posting_time:
            field_input = (
                "<label>投稿日時（カスタム属性・任意。入力すると本文より優先）"
                ' <input name="posting_time" placeholder="YYYY-MM-DD HH:MM"></label>'
            )
        return (
            f'<details><summary>課題を追加</summary><form method="post" '
            f'action="/ui/projects/{quote(project.key)}/issues">'
            '<label>件名 <input name="summary" size="40" value="お知らせ配信" required></label>'
            f"{field_input}<label>詳細<br>"
            f'<textarea name="description" rows="14" cols="70">'
            f"{_esc(demo_description(publish_at))}</textarea></label>"
            "<button>追加</button></form></details>"
        )

    @staticmethod
    def _issue_body(issue: Json, project: _Project, comments: list[Json]) -> str:
        fields = "".join(
            f"<tr><th>{_esc(f['name'])}</th><td>{_esc(f['value'])}</td></tr>" for f in issue["customFields"]
        )
        items = "".join(_Ui._comment_item(comment) for comment in comments)
        action = f"/ui/issues/{quote(issue['issueKey'])}/comments"
        return (
            f'<p><a href="/">← 一覧へ</a></p><h1>{_esc(issue["issueKey"])} '
            f"{_esc(issue['summary'])}</h1><p>状態: {_esc(issue['status']['name'])} "
            f"{_status_form(issue, project)}</p><table>{fields}</table>"
            f"<h2>詳細</h2><pre>{_esc(issue['description'])}</pre>"
            f"<h2>コメント</h2><ul>{items or '<li>まだありません。</li>'}</ul>"
            f'<form method="post" action="{action}"><label>コメントを追加<br>'
            '<textarea name="content" rows="3" cols="70" required></textarea></label>'
            "<button>送信</button></form>"
        )

    @staticmethod
    def _comment_item(comment: Json) -> str:
        changes = "".join(f"<li>{_change_text(entry)}</li>" for entry in comment["changeLog"])
        text = f"<pre>{_esc(comment['content'])}</pre>" if comment["content"] else ""
        return (
            f"<li><strong>{_esc(comment['createdUser']['name'])}</strong> "
            f'<span class="muted">{_esc(comment["created"])}</span>'
            f"{text}<ul>{changes}</ul></li>"
        )


# --- stand-alone sandbox server -----------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake Backlog for the automedia sandbox.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--api-key", default="sandbox-api-key")
    parser.add_argument("--project", action="append", help="project key; repeat for more (default: DEMO)")
    parser.add_argument("--webhook-url", help="webhook URL for every project; '{project}' becomes the key")
    parser.add_argument(
        "--seed-approved",
        type=int,
        default=0,
        metavar="N",
        help="create N issues in automedia承認 (publishing tomorrow), spread over the projects (benchmarks)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    fake = FakeBacklog(api_key=args.api_key, host=args.host, port=args.port, webhook_mode="post")
    for key in args.project or ["DEMO"]:
        fake.add_project(key, name=f"{key} 配信")
        if args.webhook_url:
            fake.set_webhook(key, args.webhook_url.replace("{project}", key))
    _seed_approved(fake, args.project or ["DEMO"], args.seed_approved)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with fake:
        logger.info("fake Backlog at %s/", fake.base_url)
        with contextlib.suppress(KeyboardInterrupt):
            stopping.wait()


def _seed_approved(fake: FakeBacklog, project_keys: Sequence[str], n: int) -> None:
    description = demo_description(_now() + timedelta(days=1))
    for i in range(n):
        project = project_keys[i % len(project_keys)]
        fake.create_issue(project, summary=f"配信 {i}", description=description, status="automedia承認")
    fake.outbox.clear()  # seeding is setup, not activity anyone should receive
    if n:
        logger.info("seeded %d approved issues", n)


if __name__ == "__main__":
    main()

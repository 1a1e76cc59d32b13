"""The fake Backlog's data: its users and defaults, and the records of a space in memory.

JSON shapes follow Backlog's API docs (https://developer.nulab.com/docs/backlog/) and the
official client's types (``nulab/backlog-js:src/entity.ts``).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

Json = dict[str, Any]

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
    "roleType": 1,
    "lang": "ja",
    "mailAddress": "automedia@example.com",
    "nulabAccount": None,
    "keyword": "automedia",
    "lastLoginTime": None,
}
"""The API key's user: every write through the HTTP API is done as this user. An
Administrator by default (`BacklogSpace.api_user_role` makes it another role)."""

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

NEW_PROJECT_STATUSES = DEFAULT_STATUSES[:4]
"""The statuses of a project Backlog has just made: automedia's are added by setup_tenant."""

DEFAULT_CUSTOM_FIELDS: list[tuple[int, str, int]] = [
    (101, "投稿日時", 1),
    (102, "自動配信実行日時", 1),
]
"""(id, name, typeId). Backlog has no date-time type, so both are Text (typeId 1)."""

PRIORITIES: list[Json] = [{"id": 2, "name": "高"}, {"id": 3, "name": "中"}, {"id": 4, "name": "低"}]

_STATUS_COLORS = {1: "#ea2c00", 2: "#4488c5", 3: "#5eb5a6", 4: "#b0be3c"}
_CUSTOM_STATUS_COLOR = "#868cb7"
_FIELD_TYPES = {1: "Text", 2: "TextArea", 3: "Numeric", 4: "Date"}
PROJECT_KEY = re.compile(r"[A-Z0-9_]+")
CUSTOM_FIELD_PARAM = re.compile(r"customField_(\d+)")
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


def error_body(message: str, code: int) -> Json:
    return {"errors": [{"message": message, "code": code, "moreInfo": ""}]}


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
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


def coerce_field_value(definition: Json, raw: object) -> Any:
    if raw is None or raw == "":
        return None
    if definition["typeId"] == 3:
        number = float(str(raw))
        return int(number) if number.is_integer() else number
    if definition["typeId"] == 4:
        date.fromisoformat(str(raw))  # Backlog takes yyyy-MM-dd; raises ValueError otherwise
    return str(raw)


def field_value(issue: Json, field_id: int) -> Any:
    return next(f["value"] for f in issue["customFields"] if f["id"] == field_id)


def set_field_value(issue: Json, field_id: int, value: Any) -> None:
    next(f for f in issue["customFields"] if f["id"] == field_id)["value"] = value


def id_window(
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


def project_json(project_id: int, key: str, name: str, order: int) -> Json:
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


def status_json(project_id: int, status_id: int, name: str, order: int) -> Json:
    color = _STATUS_COLORS.get(status_id, _CUSTOM_STATUS_COLOR)
    return {
        "id": status_id,
        "projectId": project_id,
        "name": name,
        "color": color,
        "displayOrder": (order + 1) * 1000,
    }


def custom_field_json(project_id: int, spec: tuple[int, str, int], order: int) -> Json:
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


def issue_content(issue: Json) -> Json:
    return {
        "id": issue["id"],
        "key_id": issue["keyId"],
        "summary": issue["summary"],
        "description": issue["description"],
    }


def commented_content(issue: Json, comment: Json, changes: list[Json]) -> Json:
    """Content of type 2 and 3 activities."""
    return issue_content(issue) | {
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
    received_at: float = field(default_factory=time.time, compare=False)  # answered at (epoch s)
    api_key_header: str | None = field(default=None, compare=False)  # Backlog-API-Key, when sent


@dataclass
class Fault:
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
class Project:
    data: Json
    statuses: list[Json]
    custom_fields: list[Json]
    issue_types: list[Json]
    webhooks: list[Json] = field(default_factory=list)
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

    @property
    def webhook_url(self) -> str | None:
        return self.webhooks[0]["hookUrl"] if self.webhooks else None

    def webhooks_for(self, activity_type: int) -> list[str]:
        """The URLs an activity of this type is posted to (`allEvent` or its type listed)."""
        return [h["hookUrl"] for h in self.webhooks if h["allEvent"] or activity_type in h["activityTypeIds"]]

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
class Edit:
    """The fields one update sets; None leaves a field alone."""

    status: Json | None = None
    summary: str | None = None
    description: str | None = None
    field_values: Mapping[int, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
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


def diff(project: Project, issue: Json, edit: Edit) -> list[Change]:
    changes = []
    if edit.status is not None and edit.status["id"] != issue["status"]["id"]:
        changes.append(Change("status", issue["status"], edit.status))
    for name, new in (("summary", edit.summary), ("description", edit.description)):
        if new is not None and new != issue[name]:
            changes.append(Change(name, issue[name], new))
    for field_id, new in edit.field_values.items():
        old = field_value(issue, field_id)
        if new != old:
            definition = project.field_with_id(field_id)
            assert definition is not None
            changes.append(Change(definition["name"], old, new, definition))
    return changes


SORT_KEYS = frozenset(
    "issueType category version milestone summary status priority attachment sharedFile created"
    " createdUser updated updatedUser assignee startDate dueDate estimatedHours actualHours"
    " childIssue".split()
)


def sort_key(sort: str) -> Callable[[Json], tuple[Any, ...]]:
    """Backlog's documented sort keys; those the fake does not model sort by id alone."""
    if sort in ("created", "updated", "summary"):
        return lambda issue: (issue[sort], issue["id"])
    if sort in ("status", "issueType"):
        return lambda issue: (issue[sort]["displayOrder"], issue["id"])
    if sort in ("priority", "createdUser", "updatedUser"):
        return lambda issue: (issue[sort]["id"], issue["id"])
    match = CUSTOM_FIELD_PARAM.fullmatch(sort)
    if match:
        field_id = int(match.group(1))
        return lambda issue: (str(field_value(issue, field_id) or ""), issue["id"])
    return lambda issue: (issue["id"],)


@dataclass(frozen=True)
class IssueQuery:
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

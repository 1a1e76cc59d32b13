"""Backlog API v2 over HTTP, as the fake serves it: parameters checked as Backlog does,
rate-limit headers, injected faults, then the route."""

from __future__ import annotations

import re
import time
from datetime import date
from typing import Any

from sandbox.backlog.records import (
    BOT,
    CUSTOM_FIELD_PARAM,
    PRIORITIES,
    SORT_KEYS,
    ApiError,
    Edit,
    Fault,
    IssueQuery,
    Json,
    Project,
    coerce_field_value,
    error_body,
    id_window,
)
from sandbox.backlog.routing import BacklogRequest, Params, json_answer, param, resolve
from sandbox.backlog.settings_api import ProjectSettings
from sandbox.backlog.state import BacklogSpace
from sandbox.http import HttpResponse


class RateLimiter:
    """Backlog's X-RateLimit-* headers per window and group (read = GET, update = the rest,
    search = the issue list; https://developer.nulab.com/docs/backlog/rate-limit), from the
    space's limits. A group over an enforced limit answers 429 and changes nothing."""

    def __init__(self, fake: BacklogSpace) -> None:
        self._fake = fake
        self._window, self._generation = 0, 0
        self._used: dict[str, int] = {}

    def take(self, method: str, path: str) -> tuple[bool, dict[str, str]]:
        """Count one call: (allowed, its headers). The caller holds the space's lock."""
        fake = self._fake
        span = fake.rate_limit_window
        window = int(fake.clock() // span)
        if (window, fake.rate_limit_generation) != (self._window, self._generation):
            self._window, self._generation, self._used = window, fake.rate_limit_generation, {}
        group = _group(method, path)
        limit = fake.rate_limits.get(group, fake.rate_limit_per_minute)
        used = self._used.get(group, 0)
        allowed = not fake.rate_limit_enforced or used < limit
        if allowed:
            used = self._used[group] = used + 1
        else:
            fake.rate_limited += 1
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - used, 0)),
            "X-RateLimit-Reset": str(int((window + 1) * span)),
        }
        return allowed, headers


def _group(method: str, path: str) -> str:
    if method != "GET":
        return "update"
    return "search" if path in ("/api/v2/issues", "/api/v2/issues/count") else "read"


def _int(raw: str, name: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"'{name}' must be a number.") from None


def _ints(params: Params, name: str) -> tuple[int, ...]:
    return tuple(sorted({_int(raw, name) for raw in params.get(name, [])}))


def _int_param(params: Params, name: str) -> int | None:
    raw = param(params, name)
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
    order = param(params, "order") or "desc"
    if order not in ("asc", "desc"):
        raise ApiError(400, "'order' must be 'asc' or 'desc'.")
    return order == "desc"


def _required(params: Params, name: str) -> str:
    value = param(params, name)
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
        if name in allowed or (custom_fields and CUSTOM_FIELD_PARAM.fullmatch(name)):
            continue
        if name in unmodelled or CUSTOM_FIELD_PARAM.match(name):
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


def _issue_query(params: Params) -> IssueQuery:
    _reject_unknown(params, _LIST_PARAMS, _LIST_UNMODELLED)
    sort = param(params, "sort") or "updated"
    if sort not in SORT_KEYS and not CUSTOM_FIELD_PARAM.fullmatch(sort):
        raise ApiError(400, f"'sort' does not accept '{sort}'.")
    return IssueQuery(
        project_ids=_ints(params, "projectId[]"),
        status_ids=_ints(params, "statusId[]"),
        issue_ids=frozenset(_ints(params, "id[]")),
        keyword=(param(params, "keyword") or "").casefold(),
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
    raw = param(params, name)
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        raise ApiError(400, f"'{name}' must be yyyy-MM-dd.") from None


def _fault_response(fault: Fault) -> HttpResponse:
    message, code = _FAULT_ERRORS.get(fault.status, ("Internal error.", 1))
    if 400 <= fault.status < 500 and fault.status not in _FAULT_ERRORS:
        message, code = "Invalid request.", 7
    headers = {}
    if fault.status == 429:
        headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 60)}
    body = fault.body if fault.body is not None else error_body(message, code)
    return json_answer(fault.status, body, headers | fault.headers)


class BacklogApi:
    """Backlog API v2 over HTTP: trailing slash, the API key, injected faults, then the route.

    The key comes as the `apiKey` parameter (https://developer.nulab.com/docs/backlog/auth) or in
    the `Backlog-API-Key` header (python-backlog's name, https://pypi.org/project/python-backlog/0.18.0/);
    any other place (`X-Api-Key`, none) is refused as Backlog refuses a missing key: 401 with
    error code 11, AuthenticationError (https://developer.nulab.com/docs/backlog/error-response)."""

    def __init__(self, fake: BacklogSpace) -> None:
        self._fake = fake
        self._limiter = RateLimiter(fake)
        project = r"/api/v2/projects/(?P<project>[^/]+)"
        issue = r"/api/v2/issues/(?P<issue>[^/]+)"
        table = [
            *ProjectSettings(fake, self._project).routes(project),
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

    def handle(self, request: BacklogRequest) -> HttpResponse:
        with self._fake._lock:
            allowed, limits = self._limiter.take(request.method, request.path)
        if not allowed:
            response = json_answer(429, error_body("Too many requests.", 13))
        else:
            try:
                response = self._serve(request)
            except ApiError as error:
                response = json_answer(error.status, error_body(error.message, error.code))
        response.headers = limits | response.headers
        return response

    def _serve(self, request: BacklogRequest) -> HttpResponse:
        if request.path.endswith("/"):
            raise ApiError(404, "Not Found.", 6)  # Backlog rejects a trailing slash
        sent = [request.api_key_header] if request.api_key_header is not None else request.query.get("apiKey")
        if sent != [self._fake.api_key]:
            raise ApiError(401, "Authentication failure.", 11)
        fault = self._fake._take_fault(request.method, request.path)
        if fault is not None:
            time.sleep(fault.delay)
            if fault.status >= 400:
                return _fault_response(fault)
        handler, groups = resolve(self._routes, request.method, request.path)
        with self._fake._lock:
            status, payload = handler(request.params, **groups)
            return json_answer(status, payload)

    # lookups

    def _project(self, id_or_key: str) -> Project:
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
        return 200, BOT | {"roleType": self._fake.api_user_role}

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
        page = id_window(
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
            description=param(params, "description") or "",
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
        edit = Edit(
            status=self._status_param(project, params),
            summary=param(params, "summary"),
            description=param(params, "description"),
            field_values=self._field_params(project, params),
        )
        self._fake._update(found, edit, comment=param(params, "comment") or "", user=BOT)
        return 200, found

    def delete_issue(self, params: Params, issue: str) -> tuple[int, Any]:
        _reject_unknown(params)
        found = self._issue(issue)
        self._fake._delete(found, BOT)
        return 200, found

    # comments

    def list_comments(self, params: Params, issue: str) -> tuple[int, Any]:
        _reject_unknown(params, _WINDOW_PARAMS)
        page = id_window(
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
    def _status_param(project: Project, params: Params) -> Json | None:
        raw = param(params, "statusId")
        if raw is None:
            return None
        status = project.status_with_id(_int(raw, "statusId"))
        if status is None:
            raise ApiError(400, f"No status with id {raw} in project {project.key}.")
        return status

    @staticmethod
    def _field_params(project: Project, params: Params) -> dict[int, Any]:
        values = {}
        for name, raws in params.items():
            match = CUSTOM_FIELD_PARAM.fullmatch(name)
            if match is None:
                continue
            definition = project.field_with_id(int(match.group(1)))
            if definition is None:
                raise ApiError(400, f"No custom field {match.group(1)} in project {project.key}.")
            try:
                values[definition["id"]] = coerce_field_value(definition, raws[0])
            except ValueError:
                raise ApiError(400, f"Invalid value for '{name}'.") from None
        return values

    @staticmethod
    def _issue_type_param(project: Project, params: Params) -> Json:
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

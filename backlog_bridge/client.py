"""The one Backlog API v2 client. Nothing else builds Backlog URLs.

The API key goes only to a Backlog space's own host (`core.backlog_url.base_url_problem`): a tenant's
stored URL is checked before every request, not only when it was typed in.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
from django.conf import settings
from django.core.cache import cache
from django.views.decorators.debug import sensitive_variables

from backlog_bridge.identifiers import id_like as _id_like
from backlog_bridge.identifiers import issue_key_valid, project_key_valid
from backlog_bridge.ratelimit import Pacer, rate_group
from backlog_bridge.refusals import denied_fix
from core import metrics
from core.backlog_url import base_url_problem
from core.connections import connection_denied
from core.http import USER_AGENT, ClientCache, http_client
from core.redact import secrets_redact

MAX_PAGE = 100  # Backlog's maximum `count`
# Where the API key goes. Backlog documents the `apiKey` query parameter, on every call,
# writes included (https://developer.nulab.com/docs/backlog/auth): the default. A space behind
# a proxy that logs query strings may take it in a header instead (BACKLOG_API_KEY_IN=header):
# Backlog's pages do not name the header; `Backlog-API-Key` is the name python-backlog sends
# ("The API key is sent in the 'Backlog-API-Key' request header",
# https://pypi.org/project/python-backlog/0.18.0/).
API_KEY_PARAM = "apiKey"
API_KEY_HEADER = "Backlog-API-Key"


class BacklogError(Exception):
    """Any failed Backlog call: HTTP status (0 = no response; 2xx = an answer that is not JSON,
    a proxy's or a maintenance page rather than the API), Backlog error code, retryable."""

    def __init__(self, message: str, *, status: int = 0, code: int | None = None, retry_after=None):
        message = secrets_redact(message)  # it lands in logs, last_error and Backlog comments
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status in (0, 429) or self.status >= 500 or 200 <= self.status < 300

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status else "接続エラー"
        return f"Backlog API エラー ({where}): {self.message}"


class InvalidIdentifier(BacklogError):
    """An identifier that must not go into a Backlog URL; nothing was sent (permanent)."""

    def __init__(self, kind: str, value: object):
        super().__init__(f"{kind} {str(value)[:40]!r} is not valid", status=400)


def _issue_segment(issue_id_or_key: str | int) -> str:
    """Backlog's `:issueIdOrKey`: an issue key or a positive issue id."""
    if issue_key_valid(issue_id_or_key) or _id_like(issue_id_or_key):
        return str(issue_id_or_key)
    raise InvalidIdentifier("issue key", issue_id_or_key)


def _project_segment(project_key: str) -> str:
    if project_key_valid(project_key):
        return project_key
    raise InvalidIdentifier("project key", project_key)


def _id_segment(kind: str, value: int | str) -> str:
    if _id_like(value):
        return str(value)
    raise InvalidIdentifier(kind, value)


class BacklogPaced(BacklogError):
    """A paced client's budget for this kind of call is spent: nothing was sent. Retryable
    once Backlog's window restarts, `retry_after` seconds from now."""

    def __init__(self, wait: float):
        super().__init__("Backlog の利用枠の回復待ち（送信していません）", status=429, retry_after=wait)


class BacklogHostRefused(BacklogError):
    """The base URL is not a Backlog space's (nor a listed host): no request was sent."""

    @property
    def retryable(self) -> bool:
        return False  # a setting or the tenant's URL must change first

    def __str__(self) -> str:
        return f"Backlog API を呼び出しませんでした: {self.message}"


def _error_from_response(response: httpx.Response) -> BacklogError:
    """Backlog's errors are `{"errors": [{"message", "code", "moreInfo"}]}`
    (https://developer.nulab.com/docs/backlog/error-response)."""
    if response.is_success:  # its body was not JSON
        kind = response.headers.get("Content-Type", "").split(";")[0] or "?"
        return BacklogError(f"応答が JSON ではありません（{kind}）", status=response.status_code)
    message, code = response.reason_phrase or "error", None
    try:
        first = response.json()["errors"][0]
        message, code = first.get("message") or message, first.get("code")
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    # Backlog sends X-RateLimit-Reset on every answer: it is a wait only on a 429. On a 5xx it
    # is the end of the rate-limit window (up to a minute), not a hint about the outage.
    wait = _reset_wait(response) if response.status_code == 429 else None
    return BacklogError(message, status=response.status_code, code=code, retry_after=wait)


def _reset_wait(response: httpx.Response) -> float | None:
    """Seconds until `X-RateLimit-Reset`, in UTC epoch seconds
    (https://developer.nulab.com/docs/backlog/rate-limit)."""
    reset = response.headers.get("X-RateLimit-Reset")
    if not reset:
        return None
    try:
        return max(0.0, float(reset) - time.time())
    except ValueError:
        return None


class BacklogClient:
    @sensitive_variables("api_key")  # an error report shows each frame's locals
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout: float | None = None,
        transport: httpx.BaseTransport | None = None,
        pacer: Pacer | None = None,
        tenant_id: int | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.pacer = pacer  # None: calls are not paced (a 429 is retried as below)
        self.tenant_id = tenant_id  # set: a 401/403 marks the tenant's Backlog connection failed
        self._api_key = api_key
        self._http = http_client(
            base_url=self.base_url,
            headers={"User-Agent": USER_AGENT},
            timeout=timeout or settings.BACKLOG_TIMEOUT_SECONDS,
            transport=transport,
        )

    @classmethod
    def for_tenant(cls, tenant, *, paced: bool = False) -> BacklogClient:
        """`paced`: a batch run through a whole project (the scan), whose calls wait for the
        rate-limit reset rather than draw a 429 (`Pacer.waiting`)."""
        pacer = Pacer.waiting() if paced else None
        key = tenant.backlog_api_key
        return cls(base_url=tenant.backlog_base_url, api_key=key, pacer=pacer, tenant_id=tenant.pk)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BacklogClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transport -------------------------------------------------------------

    def _request(self, method: str, path: str, *, params=None, data=None) -> Any:
        """One call, tried once: a failure raises (`retryable`, `retry_after`) and the caller
        gives its work a new due time (core/retry.py), so no worker waits in here."""
        problem = base_url_problem(self.base_url)
        if problem:  # a URL stored before the check, or a setting changed since
            raise BacklogHostRefused(problem)
        # Backlog rejects a trailing slash (https://qiita.com/tentatsu/items/e7b9f90cc126592c54a5).
        path = "/api/v2/" + path.strip("/")
        query, headers = _credentials(self._api_key)
        query += _pairs(params)
        group = rate_group(method, path)
        if self.pacer is not None and (wait := self.pacer.before(group)):
            raise BacklogPaced(wait)
        try:
            response = self._http.request(method, path, params=query, **_form(data, headers))
        except httpx.TransportError as exc:
            metrics.outbound_call("backlog", "connection_error")
            raise BacklogError(f"{type(exc).__name__}: {path}") from exc
        metrics.outbound_call("backlog", str(response.status_code))
        if self.pacer is not None:
            self.pacer.after(group, response.headers)
        if response.is_success:
            with contextlib.suppress(ValueError):
                return response.json() if response.content else None
        error = _error_from_response(response)
        if response.status_code in (401, 403) and self.tenant_id is not None:
            problem = denied_fix(error.status, error.message)
            connection_denied(tenant_id=self.tenant_id, platform="backlog", problem=problem)
        raise error

    # -- issues ----------------------------------------------------------------

    def get_issue(self, issue_key: str) -> dict:
        return self._request("GET", f"issues/{_issue_segment(issue_key)}")

    def get_comment(self, issue_key: str, comment_id: int) -> dict:
        """One comment as Backlog has it (text, createdUser): what a command runs from."""
        path = f"issues/{_issue_segment(issue_key)}/comments/{_id_segment('comment id', comment_id)}"
        return self._request("GET", path)

    def update_issue(
        self,
        issue_key: str,
        *,
        status_id: int | None = None,
        custom_fields: dict[int, str] | None = None,
        comment: str | None = None,
    ) -> dict:
        """One PATCH: status, custom fields and a comment together (one write-back call)."""
        data: dict[str, Any] = {}
        if status_id is not None:
            data["statusId"] = status_id
        for field_id, value in (custom_fields or {}).items():
            data[f"customField_{field_id}"] = value
        if comment:
            data["comment"] = comment
        return self._request("PATCH", f"issues/{_issue_segment(issue_key)}", data=data)

    def add_comment(self, issue_key: str, content: str) -> dict:
        return self._request(
            "POST", f"issues/{_issue_segment(issue_key)}/comments", data={"content": content}
        )

    def issues_by_id(self, issue_ids: list[int]) -> list[dict]:
        """Up to 100 issues in one call: the issue list filtered by `id[]`."""
        ids = [_id_segment("issue id", issue_id) for issue_id in issue_ids[:MAX_PAGE]]
        return self._request("GET", "issues", params={"id[]": ids, "count": MAX_PAGE})

    def iter_issues(
        self, *, project_id: int, status_ids: list[int] | None = None, count: int = MAX_PAGE
    ) -> Iterator[dict]:
        """Every matching issue, page by page (offset paging, oldest first for stability)."""
        offset = 0
        while True:
            params = {
                "projectId[]": [project_id],
                "statusId[]": status_ids or [],
                "count": count,
                "offset": offset,
                "sort": "created",
                "order": "asc",
            }
            page = self._request("GET", "issues", params=params)
            yield from page
            if len(page) < count:
                return
            offset += count

    def myself(self, *, fresh: bool = False) -> dict:
        """The user this API key acts as (automedia's own comments come from it); `fresh`: asked
        now (a connection check), not the cached answer."""
        key = f"backlog:{self.base_url}:myself:{hash(self._api_key)}"
        user = None if fresh else cache.get(key)
        if user is None:
            user = self._request("GET", "users/myself")
            cache.set(key, user, settings.BACKLOG_METADATA_TTL_SECONDS)
        return user

    # -- projects --------------------------------------------------------------

    def activities(self, project_key: str, *, min_id: int | None = None, latest: bool = False) -> list[dict]:
        """Up to 100 project activities after `min_id`, oldest first; or just the latest one."""
        params: dict[str, Any] = {"count": MAX_PAGE, "order": "asc"}
        if latest:
            params = {"count": 1, "order": "desc"}
        elif min_id is not None:
            params["minId"] = min_id
        return self._request("GET", f"projects/{_project_segment(project_key)}/activities", params=params)

    def project(self, project_key: str) -> dict:
        return self._cached(
            project_key, "project", lambda: self._request("GET", f"projects/{_project_segment(project_key)}")
        )

    def statuses(self, project_key: str) -> list[dict]:
        return self._cached(project_key, "statuses", lambda: self.project_list(project_key, "statuses"))

    def custom_fields(self, project_key: str) -> list[dict]:
        return self._cached(
            project_key, "customFields", lambda: self.project_list(project_key, "customFields")
        )

    def project_list(self, project_key: str, kind: str) -> list[dict]:
        """The project's `statuses`, `customFields` or `webhooks` as Backlog has them now."""
        return self._request("GET", _project_list_path(project_key, kind))

    def project_add(self, project_key: str, kind: str, data: dict) -> dict:
        """Add Status, Add Custom Field or Add Webhook: Administrator or Project Administrator only
        (https://developer.nulab.com/docs/backlog/api/2/add-status/, …/add-custom-field/,
        …/add-webhook/). The cached list of that kind is dropped."""
        added = self._request("POST", _project_list_path(project_key, kind), data=data)
        cache.delete(f"backlog:{self.base_url}:{project_key}:{kind}")
        return added

    def status_id(self, project_key: str, name: str) -> int | None:
        return _id_by_name(self.statuses(project_key), name)

    def custom_field_id(self, project_key: str, name: str) -> int | None:
        return _id_by_name(self.custom_fields(project_key), name)

    def _cached(self, project_key: str, kind: str, fetch):
        # Statuses and custom fields are resolved by name and change rarely (seed 001).
        key = f"backlog:{self.base_url}:{project_key}:{kind}"
        value = cache.get(key)
        if value is None:
            value = fetch()
            cache.set(key, value, settings.BACKLOG_METADATA_TTL_SECONDS)
        return value


PROJECT_LISTS = frozenset({"statuses", "customFields", "webhooks"})


def _project_list_path(project_key: str, kind: str) -> str:
    if kind not in PROJECT_LISTS:
        raise ValueError(f"no project list {kind!r}")
    return f"projects/{_project_segment(project_key)}/{kind}"


def _id_by_name(items: list[dict], name: str) -> int | None:
    return next((item["id"] for item in items if item.get("name") == name), None)


@sensitive_variables("api_key")
def _credentials(api_key: str) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """Where the API key goes (BACKLOG_API_KEY_IN): the `apiKey` parameter, or its header."""
    if settings.BACKLOG_API_KEY_IN == "header":
        return [], {API_KEY_HEADER: api_key}
    return [(API_KEY_PARAM, api_key)], {}


def _form(data: dict | None, headers: dict[str, str]) -> dict:
    """Backlog takes form-encoded bodies (https://github.com/nulab/backlog-js, src/request.ts)."""
    if data is None:
        return {"headers": headers} if headers else {}
    return {
        "content": urlencode(_pairs(data)),
        "headers": {**headers, "Content-Type": "application/x-www-form-urlencoded"},
    }


def _pairs(mapping: dict | None) -> list[tuple[str, Any]]:
    """Flatten {name: value | [values]} into query/form pairs (`statusId[]=1&statusId[]=2`)."""
    pairs: list[tuple[str, Any]] = []
    for name, value in (mapping or {}).items():
        values = value if isinstance(value, list | tuple) else [value]
        pairs.extend((name, str(v)) for v in values)
    return pairs


_shared = ClientCache(
    lambda base_url, api_key, tenant_id: BacklogClient(
        base_url=base_url, api_key=api_key, tenant_id=tenant_id
    )
)


_paced = ClientCache(
    lambda base_url, api_key, tenant_id: BacklogClient(
        base_url=base_url, api_key=api_key, pacer=Pacer(), tenant_id=tenant_id
    )
)


def paced_client(tenant) -> BacklogClient:
    """The worker process's kept-alive client for this tenant's space whose calls are paced by
    Backlog's rate-limit headers (its Pacer remembers the budget between tasks): a call whose
    budget is spent raises `BacklogPaced` instead of waiting."""
    return _paced.get(tenant.backlog_base_url, tenant.backlog_api_key, tenant.pk)


def shared_client(tenant) -> BacklogClient:
    """The worker process's kept-alive client for this tenant's space (never close it):
    for loops that call Backlog once or twice per row (deliveries, webhook drains)."""
    return _shared.get(tenant.backlog_base_url, tenant.backlog_api_key, tenant.pk)

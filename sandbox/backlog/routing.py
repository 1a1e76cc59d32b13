"""The fake Backlog's requests and routes: what its API and its UI share."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from sandbox.backlog.records import ApiError
from sandbox.http import HttpResponse, json_response

Params = dict[str, list[str]]
JSON = "application/json;charset=utf-8"


@dataclass
class BacklogRequest:
    method: str
    path: str
    query: Params
    form: Params
    api_key_header: str | None = None  # the Backlog-API-Key header, when sent

    @property
    def params(self) -> Params:
        """Query and body parameters together (servlet semantics), without apiKey."""
        merged = {name: list(values) for name, values in self.query.items() if name != "apiKey"}
        for name, values in self.form.items():
            merged.setdefault(name, []).extend(values)
        return merged


def param(params: Params, name: str) -> str | None:
    values = params.get(name)
    return values[0] if values else None


def json_answer(status: int, payload: Any, headers: dict[str, str] | None = None) -> HttpResponse:
    return json_response(status, payload, headers, content_type=JSON)


def html_answer(text: str, status: int = 200) -> HttpResponse:
    return HttpResponse(status, text.encode(), "text/html; charset=utf-8")


def redirect(location: str) -> HttpResponse:
    return HttpResponse(303, b"", "text/plain; charset=utf-8", {"Location": location})


Route = tuple[str, re.Pattern[str], Callable[..., Any]]


def resolve(routes: Sequence[Route], method: str, path: str) -> tuple[Callable[..., Any], Params]:
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

"""In-memory fake of the LINE Messaging API, served on loopback.

Used by the unit and end-to-end tests, by the benchmarks and by the ``sandbox`` process of
``make run``. Client code must not be able to tell it from ``api.line.me``, so it follows
LINE's docs (https://developers.line.biz/en/reference/messaging-api/) and OpenAPI specs
(``line/line-openapi``, https://github.com/line/line-openapi: ``messaging-api.yml``,
``insight.yml``; a copy is in tests/contracts/line-openapi/).
It has to serve well over 1,000 requests/s on loopback, so handlers are cheap and nothing is
logged per request above DEBUG.

What it models, and the choices made where LINE's behaviour is undocumented:

- One channel. ``channel_tokens`` lists the accepted ``Authorization: Bearer`` tokens (None
  accepts any non-empty token); they all share one quota, one set of groups and one retry-key
  space.
- Every answer carries ``x-line-request-id`` (a uuid4); bodies are JSON, errors have LINE's
  ``ErrorResponse`` shape. The error *texts* are LINE's where a public source quotes one and the
  fake's own otherwise: clients must match on status and headers, never on text.
- Send bodies are validated pragmatically (the required fields of every message type, text
  length in UTF-16 code units, https media URLs, list sizes); schema problems answer 400
  ``{"message": "The request body has N error(s)", "details": [{"message", "property"}]}``.
  A ``to`` that is not a LINE id (``U…`` user, ``C…`` group, ``R…`` room; multicast: users
  only) answers 400 ``The property, 'to', in the request body is invalid`` without details.
- Groups: ``add_group`` registers groups. While none is registered a push to any ``C…`` id is
  accepted and counts as ``DEFAULT_MEMBER_COUNT`` recipients; once one is registered, a push
  to an unregistered group answers 400. Group summary and member count answer 404 for any
  unregistered group. Rooms are always accepted and count as ``DEFAULT_MEMBER_COUNT``.
- ``X-Line-Retry-Key`` is honoured on push and multicast; any other endpoint answers 400 when
  it is sent. A key must be a canonical (8-4-4-4-12) hexadecimal UUID, compared
  case-insensitively. A key stays accepted for ``RETRY_KEY_TTL`` seconds (24 h) after its
  first accepted request, measured with ``FakeLine.clock``. A repeat answers 409 with
  ``x-line-accepted-request-id`` and, for a push, the original ``sentMessages``; it is not
  sent again and costs no quota.
- Quota: messages are counted per recipient, not per message object
  (https://developers.line.biz/en/docs/messaging-api/pricing/: a push of 4 messages to a
  5-person chat counts 5): push to a user 1, to a group its member count, multicast
  ``len(to)``; replies are free. The quota starts as ``{"type": "none"}`` (no
  target limit) so that benchmarks never run out; ``set_quota`` sets a limit, and a push or
  multicast that would exceed it answers 429 ``You have reached your monthly limit.`` and is
  not sent. There is no month rollover.
- Reply tokens are not issued by the fake: any non-empty token is accepted once; reusing one
  answers 400 ``Invalid reply token``.
- ``numOfCustomAggregationUnits`` counts the distinct unit names of accepted sends.
  Per-unit statistics come from ``set_unit_stats``; an unknown unit has all-null figures.
- ``fail_next`` faults apply after authentication and before routing, in the order added.
  A status below 400 (use 0) only delays: the request is served normally after ``delay``
  seconds, so a client that timed out meanwhile still had its message sent. An error status
  answers that error after ``delay`` and sends nothing, unless ``then_accept=True``: then the
  request is processed first (sent, quota charged, retry key remembered) and only the answer
  is replaced. A delayed error is therefore a timeout in which nothing was sent.

Run ``python -m sandbox.line --help`` for the stand-alone server.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import re
import secrets
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote

from sandbox._http import FakeServer, KeepAliveHandler, serve_in_thread, stop_serving

__all__ = [
    "AUTH_FAILED",
    "DEFAULT_MEMBER_COUNT",
    "MAX_MESSAGES",
    "MAX_MULTICAST_RECIPIENTS",
    "MAX_TEXT_LENGTH",
    "RETRY_KEY_TTL",
    "FakeLine",
    "RecordedLineRequest",
]

logger = logging.getLogger(__name__)

Json = dict[str, Any]

PUSH = "/v2/bot/message/push"
MULTICAST = "/v2/bot/message/multicast"
REPLY = "/v2/bot/message/reply"
RETRY_KEY_PATHS = frozenset({PUSH, MULTICAST})

MAX_MESSAGES = 5
MAX_MULTICAST_RECIPIENTS = 500
MAX_TEXT_LENGTH = 5000
MAX_URL_LENGTH = 2000
MAX_QUICK_REPLY_ITEMS = 13
MAX_BODY_BYTES = 2 * 1024 * 1024
RETRY_KEY_TTL = 24 * 60 * 60
DEFAULT_MEMBER_COUNT = 3
MAX_AGGREGATION_DAYS = 30

AUTH_FAILED = "Authentication failed. Confirm that the access token in the authorization header is valid."
RATE_LIMITED = "The API rate limit has been exceeded. Try again later."
MONTHLY_LIMIT = "You have reached your monthly limit."
RETRY_KEY_ACCEPTED = "The retry key is already accepted"
INVALID_TO = "The property, 'to', in the request body is invalid"

_MESSAGE_TYPES = (
    "text",
    "textV2",
    "sticker",
    "image",
    "video",
    "audio",
    "location",
    "imagemap",
    "template",
    "flex",
    "coupon",
)
_REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "textV2": ("text",),
    "sticker": ("packageId", "stickerId"),
    "image": ("originalContentUrl", "previewImageUrl"),
    "video": ("originalContentUrl", "previewImageUrl"),
    "audio": ("originalContentUrl", "duration"),
    "location": ("title", "address", "latitude", "longitude"),
    "imagemap": ("baseUrl", "altText", "baseSize", "actions"),
    "template": ("altText", "template"),
    "flex": ("altText", "contents"),
    "coupon": ("couponId",),
}
_HTTPS_FIELDS: dict[str, tuple[str, ...]] = {
    "image": ("originalContentUrl", "previewImageUrl"),
    "video": ("originalContentUrl", "previewImageUrl"),
    "audio": ("originalContentUrl",),
    "imagemap": ("baseUrl",),
}
_OBJECT_FIELDS: dict[str, str] = {"template": "template", "flex": "contents"}
_FLEX_CONTAINERS = frozenset({"bubble", "carousel"})
_QUOTABLE_TYPES = frozenset({"text", "textV2", "sticker", "image", "video"})

_RETRY_KEY = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_USER_ID = re.compile(r"U[0-9a-zA-Z_-]+")
_RECIPIENT_ID = re.compile(r"[UCR][0-9a-zA-Z_-]+")
_UNIT_NAME = re.compile(r"[a-zA-Z0-9_]{1,30}")
_YYYYMMDD = re.compile(r"[0-9]{8}")

_OVERVIEW_KEYS = ("uniqueImpression", "uniqueClick", "uniqueMediaPlayed", "uniqueMediaPlayed100Percent")

_FAULT_MESSAGES = {
    400: "Bad request",
    401: AUTH_FAILED,
    403: "Access to this API is not available for your account",
    404: "Not found",
    409: RETRY_KEY_ACCEPTED,
    429: RATE_LIMITED,
    500: "Internal server error",
}


# --- records and errors -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedLineRequest:
    """One HTTP request the fake answered, for assertions."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # the parsed JSON body, or None (no body, or not JSON)
    status: int  # the status put on the wire
    received_at: float  # time.time() when the request line was read
    request_id: str  # the x-line-request-id of the answer
    query: dict[str, list[str]] = field(default_factory=dict)
    accepted: bool = False  # a send LINE took: sent once, quota charged (even if the answer was a fault)
    response: Any = None  # the JSON body of the answer


class LineError(Exception):
    """An answer in LINE's ``ErrorResponse`` shape."""

    def __init__(self, status: int, message: str, *, details=None, headers=None, extra=None) -> None:
        super().__init__(message)
        self.status = status
        self.body: Json = {"message": message}
        if details:
            self.body["details"] = details
        if extra:
            self.body.update(extra)
        self.headers: dict[str, str] = dict(headers or {})

    def response(self) -> _Response:
        return _Response(self.status, self.body, self.headers)


def _invalid_body(errors: list[tuple[str, str]]) -> LineError:
    details = [{"message": message, "property": prop} for prop, message in errors]
    return LineError(400, f"The request body has {len(errors)} error(s)", details=details)


@dataclass(slots=True)
class _Fault:
    status: int
    count: int
    path_prefix: str | None
    headers: dict[str, str]
    body: Any
    delay: float
    then_accept: bool

    def response(self) -> _Response:
        body = self.body
        if body is None:
            body = {"message": _FAULT_MESSAGES.get(self.status) or _phrase(self.status)}
        return _Response(self.status, body, dict(self.headers))


@dataclass(slots=True)
class _Accepted:
    at: float
    request_id: str
    sent_messages: list[Json] | None


@dataclass(slots=True)
class _Group:
    group_id: str
    name: str
    member_count: int

    def summary(self) -> Json:
        return {
            "groupId": self.group_id,
            "groupName": self.name,
            "pictureUrl": f"https://profile.line-scdn.net/fake-group/{self.group_id}",
        }


@dataclass(slots=True)
class _Request:
    method: str
    path: str
    query_string: str
    headers: dict[str, str]
    raw_body: bytes
    received_at: float
    body: Any = None  # the parsed JSON body, or None
    parsed: bool = False  # whether raw_body was JSON

    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.query_string, keep_blank_values=True) if self.query_string else {}


@dataclass(slots=True)
class _Response:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    accepted: bool = False


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


# --- validation ---------------------------------------------------------------------------


def _utf16_length(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _check_https_url(value: Any, prop: str, errors: list[tuple[str, str]]) -> None:
    if not isinstance(value, str) or not value.startswith("https://") or len(value) <= len("https://"):
        errors.append((prop, "Must be a valid HTTPS URL"))
    elif len(value) > MAX_URL_LENGTH:
        errors.append((prop, f"Length must be between 0 and {MAX_URL_LENGTH}"))


def _check_message(message: Any, prop: str, errors: list[tuple[str, str]]) -> None:
    if not isinstance(message, dict):
        errors.append((prop, "Must be an object"))
        return
    kind = message.get("type")
    if kind is None or kind == "":
        errors.append((f"{prop}.type", "May not be empty"))
        return
    if kind not in _REQUIRED_FIELDS:
        errors.append((f"{prop}.type", f"Must be one of the following values: [{', '.join(_MESSAGE_TYPES)}]"))
        return
    for name in _REQUIRED_FIELDS[kind]:
        value = message.get(name)
        if value is None or value == "" or value == [] or value == {}:
            errors.append((f"{prop}.{name}", "May not be empty"))
    if kind in ("text", "textV2"):
        text = message.get("text")
        if text is not None and not isinstance(text, str):
            errors.append((f"{prop}.text", "Must be a string"))
        elif text and _utf16_length(text) > MAX_TEXT_LENGTH:
            errors.append((f"{prop}.text", f"Length must be between 0 and {MAX_TEXT_LENGTH}"))
    for name in _HTTPS_FIELDS.get(kind, ()):
        if message.get(name):
            _check_https_url(message[name], f"{prop}.{name}", errors)
    object_field = _OBJECT_FIELDS.get(kind)
    if object_field is not None and message.get(object_field):
        contained = message[object_field]
        if not isinstance(contained, dict) or not contained.get("type"):
            errors.append((f"{prop}.{object_field}.type", "May not be empty"))
        elif kind == "flex" and contained["type"] not in _FLEX_CONTAINERS:
            errors.append(
                (f"{prop}.contents.type", "Must be one of the following values: [bubble, carousel]")
            )
    quick_reply = message.get("quickReply")
    if isinstance(quick_reply, dict):
        items = quick_reply.get("items")
        if isinstance(items, list) and len(items) > MAX_QUICK_REPLY_ITEMS:
            errors.append((f"{prop}.quickReply.items", f"Size must be between 0 and {MAX_QUICK_REPLY_ITEMS}"))


def _check_messages(body: Json, errors: list[tuple[str, str]]) -> None:
    messages = body.get("messages")
    if messages is None:
        errors.append(("messages", "May not be null"))
    elif not isinstance(messages, list):
        errors.append(("messages", "Must be an array"))
    elif not 1 <= len(messages) <= MAX_MESSAGES:
        errors.append(("messages", f"Size must be between 1 and {MAX_MESSAGES}"))
    else:
        for index, message in enumerate(messages):
            _check_message(message, f"messages[{index}]", errors)
    disabled = body.get("notificationDisabled")
    if disabled is not None and not isinstance(disabled, bool):
        errors.append(("notificationDisabled", "Must be a boolean"))


def _check_units(body: Json, errors: list[tuple[str, str]]) -> None:
    units = body.get("customAggregationUnits")
    if units is None:
        return
    if not isinstance(units, list):
        errors.append(("customAggregationUnits", "Must be an array"))
    elif len(units) > 1:
        errors.append(("customAggregationUnits", "Size must be between 0 and 1"))
    else:
        for index, unit in enumerate(units):
            if not isinstance(unit, str) or _UNIT_NAME.fullmatch(unit) is None:
                errors.append((f"customAggregationUnits[{index}]", 'Must match "^[a-zA-Z0-9_]{1,30}$"'))


def _check_push(body: Json) -> None:
    errors: list[tuple[str, str]] = []
    to = body.get("to")
    if to is None or to == "":
        errors.append(("to", "May not be empty"))
    elif not isinstance(to, str):
        errors.append(("to", "Must be a string"))
    _check_messages(body, errors)
    _check_units(body, errors)
    if errors:
        raise _invalid_body(errors)
    if _RECIPIENT_ID.fullmatch(to) is None:
        raise LineError(400, INVALID_TO)


def _check_multicast(body: Json) -> None:
    errors: list[tuple[str, str]] = []
    to = body.get("to")
    if to is None:
        errors.append(("to", "May not be null"))
    elif not isinstance(to, list):
        errors.append(("to", "Must be an array"))
    elif not 1 <= len(to) <= MAX_MULTICAST_RECIPIENTS:
        errors.append(("to", f"Size must be between 1 and {MAX_MULTICAST_RECIPIENTS}"))
    else:
        errors.extend(
            (f"to[{i}]", "Must be a string") for i, user in enumerate(to) if not isinstance(user, str)
        )
    _check_messages(body, errors)
    _check_units(body, errors)
    if errors:
        raise _invalid_body(errors)
    if any(_USER_ID.fullmatch(user) is None for user in to):
        raise LineError(400, INVALID_TO)


def _check_reply(body: Json) -> None:
    errors: list[tuple[str, str]] = []
    token = body.get("replyToken")
    if token is None or token == "":
        errors.append(("replyToken", "May not be empty"))
    elif not isinstance(token, str):
        errors.append(("replyToken", "Must be a string"))
    _check_messages(body, errors)
    if errors:
        raise _invalid_body(errors)


def _parse_yyyymmdd(params: dict[str, list[str]], name: str, errors: list[tuple[str, str]]) -> date | None:
    raw = params.get(name, [""])[0]
    if _YYYYMMDD.fullmatch(raw):
        try:
            return datetime.strptime(raw, "%Y%m%d").date()
        except ValueError:
            pass
    errors.append((name, "Must be a date in yyyyMMdd format"))
    return None


# --- the fake -----------------------------------------------------------------------------


class FakeLine:
    """A LINE channel in memory: sends, retry keys, quota, groups, profiles and statistics."""

    def __init__(
        self, *, channel_tokens: set[str] | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.channel_tokens = None if channel_tokens is None else frozenset(channel_tokens)
        self.requests: list[RecordedLineRequest] = []
        self.clock: Callable[[], float] = time.time
        """Wall clock for retry-key expiry; tests may replace it."""
        self._address = (host, port)
        self._lock = threading.RLock()
        self._server: FakeServer | None = None
        self._thread: threading.Thread | None = None
        self._routes = _Routes(self)
        self._clear()

    def _clear(self) -> None:
        self._faults: list[_Fault] = []
        self._retry_keys: dict[str, _Accepted] = {}
        self._groups: dict[str, _Group] = {}
        self._used_reply_tokens: set[str] = set()
        self._units_used: set[str] = set()
        self._unit_stats: dict[str, Json] = {}
        self._quota_type = "none"
        self._quota_value = 0
        self._total_usage = 0
        self._message_ids = itertools.count(600_000_000_000_000_000 + secrets.randbelow(10**15))

    # lifecycle

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeLine is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeLine:
        if self._server is not None:
            return self
        self._server, self._thread = serve_in_thread(self._address, self, _RequestHandler, "fake-line")
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        stop_serving(server, self._thread)

    def __enter__(self) -> FakeLine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # setup

    def fail_next(
        self,
        status: int,
        *,
        count: int = 1,
        path_prefix: str | None = None,
        headers: dict[str, str] | None = None,
        body: Any = None,
        delay: float = 0.0,
        then_accept: bool = False,
    ) -> None:
        """Answer the next ``count`` authenticated requests under ``path_prefix`` with a fault.

        ``status`` below 400 (use 0): wait ``delay`` seconds, then serve normally (a timeout
        after which the message was sent anyway). An error status: wait, then answer it
        with ``body`` (default: LINE's message for that status) and ``headers``; nothing is
        sent unless ``then_accept`` is true, in which case the request is processed first and
        only its answer is replaced ("LINE accepted it but the answer was lost").
        """
        fault = _Fault(status, count, path_prefix, dict(headers or {}), body, delay, then_accept)
        with self._lock:
            self._faults.append(fault)

    def add_group(self, group_id: str, *, name: str = "グループ", member_count: int = 3) -> None:
        if not group_id.startswith("C"):
            raise ValueError("LINE group ids start with 'C'")
        with self._lock:
            self._groups[group_id] = _Group(group_id, name, member_count)

    def set_quota(self, *, type: str = "limited", value: int = 5000, total_usage: int = 0) -> None:
        if type not in ("limited", "none"):
            raise ValueError("quota type is 'limited' or 'none'")
        with self._lock:
            self._quota_type = type
            self._quota_value = value
            self._total_usage = total_usage

    def set_unit_stats(
        self,
        unit: str,
        overview: dict,
        *,
        messages: list[dict] | None = None,
        clicks: list[dict] | None = None,
    ) -> None:
        """The answer of the per-unit statistics endpoint for ``unit`` (any period)."""
        stats = {
            "overview": dict.fromkeys(_OVERVIEW_KEYS) | dict(overview),
            "messages": list(messages or []),
            "clicks": list(clicks or []),
        }
        with self._lock:
            self._unit_stats[unit] = stats

    def reset(self) -> None:
        """Forget requests, faults, retry keys, groups, quota, statistics; keep the tokens."""
        with self._lock:
            self.requests.clear()
            self._clear()

    # inspection

    def sent(self, path: str | None = None) -> list[RecordedLineRequest]:
        """Accepted sends (push, multicast, reply) in the order they were answered; ``path``
        filters ("push" is short for "/v2/bot/message/push").

        A request is recorded once it is answered, so a send accepted before an injected
        delay (``then_accept``) shows up here only when its delayed answer goes out.
        """
        if path is not None and not path.startswith("/"):
            path = f"/v2/bot/message/{path}"
        with self._lock:
            return [r for r in self.requests if r.accepted and (path is None or r.path == path)]

    @property
    def total_usage(self) -> int:
        with self._lock:
            return self._total_usage

    # request handling

    def _handle(self, request: _Request) -> tuple[RecordedLineRequest, dict[str, str]]:
        request_id = str(uuid.uuid4())
        try:
            response = self._serve(request, request_id)
        except LineError as error:
            response = error.response()
        except Exception:
            logger.exception("fake LINE failed on %s %s", request.method, request.path)
            response = _Response(500, {"message": "Internal server error"})
        response.headers["x-line-request-id"] = request_id
        recorded = RecordedLineRequest(
            method=request.method,
            path=request.path,
            headers=request.headers,
            body=request.body,
            status=response.status,
            received_at=request.received_at,
            request_id=request_id,
            query=request.query(),
            accepted=response.accepted,
            response=response.body,
        )
        with self._lock:
            self.requests.append(recorded)
        return recorded, response.headers

    def _serve(self, request: _Request, request_id: str) -> _Response:
        self._authenticate(request.headers.get("authorization"))
        fault = self._take_fault(request.path) if self._faults else None
        if fault is None:
            return self._routes.dispatch(request, request_id)
        if fault.then_accept:
            try:
                real = self._routes.dispatch(request, request_id)
            except LineError as error:
                real = error.response()
            time.sleep(fault.delay)
            if fault.status < 400:
                return real
            replaced = fault.response()
            replaced.accepted = real.accepted
            return replaced
        time.sleep(fault.delay)
        if fault.status < 400:
            return self._routes.dispatch(request, request_id)
        return fault.response()

    def _authenticate(self, header: str | None) -> None:
        scheme, _, token = (header or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise LineError(401, AUTH_FAILED)
        if self.channel_tokens is not None and token not in self.channel_tokens:
            raise LineError(401, AUTH_FAILED)

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.path_prefix is None or path.startswith(fault.path_prefix):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    # state changes behind the endpoints; the caller holds the lock

    def _sent_messages(self, messages: list[Json]) -> list[Json]:
        sent = []
        for message in messages:
            entry = {"id": str(next(self._message_ids))}
            if message.get("type") in _QUOTABLE_TYPES:
                entry["quoteToken"] = secrets.token_urlsafe(48)
            sent.append(entry)
        return sent

    def _check_retry_key(self, key: str | None) -> None:
        if key is None:
            return
        accepted = self._retry_keys.get(key)
        if accepted is None:
            return
        if self.clock() - accepted.at > RETRY_KEY_TTL:
            del self._retry_keys[key]
            return
        extra = {"sentMessages": accepted.sent_messages} if accepted.sent_messages else None
        raise LineError(
            409,
            RETRY_KEY_ACCEPTED,
            headers={"x-line-accepted-request-id": accepted.request_id},
            extra=extra,
        )

    def _recipient_count(self, to: str) -> int:
        if to.startswith("U"):
            return 1
        if to.startswith("R"):
            return DEFAULT_MEMBER_COUNT
        group = self._groups.get(to)
        if group is not None:
            return group.member_count
        if self._groups:
            raise LineError(400, INVALID_TO)
        return DEFAULT_MEMBER_COUNT

    def _charge(self, cost: int) -> None:
        if self._quota_type == "limited" and self._total_usage + cost > self._quota_value:
            raise LineError(429, MONTHLY_LIMIT)
        self._total_usage += cost

    def _accept(self, body: Json, key: str | None, request_id: str, cost: int, keep: bool) -> list[Json]:
        self._check_retry_key(key)
        self._charge(cost)
        sent = self._sent_messages(body["messages"])
        if key is not None:
            self._retry_keys[key] = _Accepted(self.clock(), request_id, sent if keep else None)
        self._units_used.update(body.get("customAggregationUnits") or ())
        return sent


# --- endpoints ----------------------------------------------------------------------------


_Handler = Callable[..., _Response]


class _Routes:
    """The Messaging API endpoints; each takes (request, request_id, **path parameters)."""

    def __init__(self, fake: FakeLine) -> None:
        self._fake = fake
        self._exact: dict[str, dict[str, _Handler]] = {
            PUSH: {"POST": self.push},
            MULTICAST: {"POST": self.multicast},
            REPLY: {"POST": self.reply},
            "/v2/bot/message/quota": {"GET": self.quota},
            "/v2/bot/message/quota/consumption": {"GET": self.consumption},
            "/v2/bot/message/aggregation/info": {"GET": self.aggregation_info},
            "/v2/bot/insight/message/event/aggregation": {"GET": self.unit_statistics},
        }
        patterns: list[tuple[str, str, _Handler]] = [
            ("GET", r"/v2/bot/group/(?P<group_id>[^/]+)/summary", self.group_summary),
            ("GET", r"/v2/bot/group/(?P<group_id>[^/]+)/members/count", self.group_member_count),
            ("GET", r"/v2/bot/profile/(?P<user_id>[^/]+)", self.profile),
            (
                "POST",
                r"/v2/bot/message/validate/(?P<kind>reply|push|multicast|narrowcast|broadcast)",
                self.validate,
            ),
        ]
        self._patterns = [(method, re.compile(path), handler) for method, path, handler in patterns]

    def dispatch(self, request: _Request, request_id: str) -> _Response:
        handler, params = self._resolve(request.method, request.path)
        if "x-line-retry-key" in request.headers and request.path not in RETRY_KEY_PATHS:
            raise LineError(400, "The retry key is not supported on this endpoint")
        if request.method == "POST":
            self._check_json_body(request)
        return handler(request, request_id, **params)

    def _resolve(self, method: str, path: str) -> tuple[_Handler, dict[str, str]]:
        by_method = self._exact.get(path)
        if by_method is not None:
            handler = by_method.get(method)
            if handler is None:
                raise LineError(405, "Method not allowed")
            return handler, {}
        for route_method, pattern, handler in self._patterns:
            match = pattern.fullmatch(path)
            if match is not None:
                if route_method != method:
                    raise LineError(405, "Method not allowed")
                return handler, {name: unquote(value) for name, value in match.groupdict().items()}
        raise LineError(404, "Not found")

    @staticmethod
    def _check_json_body(request: _Request) -> None:
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise LineError(415, "Unsupported Media Type")
        if not request.parsed:
            raise LineError(400, "The request body could not be parsed as JSON")
        if not isinstance(request.body, dict):
            raise LineError(400, "The request body must be a JSON object")

    @staticmethod
    def _retry_key(request: _Request) -> str | None:
        key = request.headers.get("x-line-retry-key")
        if key is None:
            return None
        if _RETRY_KEY.fullmatch(key.strip()) is None:
            raise LineError(400, "The value of the X-Line-Retry-Key header must be a UUID")
        return key.strip().lower()

    # sends

    def push(self, request: _Request, request_id: str) -> _Response:
        key = self._retry_key(request)
        body = request.body
        _check_push(body)
        with self._fake._lock:
            cost = self._fake._recipient_count(body["to"])
            sent = self._fake._accept(body, key, request_id, cost, keep=True)
        return _Response(200, {"sentMessages": sent}, accepted=True)

    def multicast(self, request: _Request, request_id: str) -> _Response:
        key = self._retry_key(request)
        body = request.body
        _check_multicast(body)
        with self._fake._lock:
            self._fake._accept(body, key, request_id, len(body["to"]), keep=False)
        return _Response(200, {}, accepted=True)

    def reply(self, request: _Request, request_id: str) -> _Response:
        body = request.body
        _check_reply(body)
        with self._fake._lock:
            if body["replyToken"] in self._fake._used_reply_tokens:
                raise LineError(400, "Invalid reply token")
            self._fake._used_reply_tokens.add(body["replyToken"])
            sent = self._fake._sent_messages(body["messages"])
        return _Response(200, {"sentMessages": sent}, accepted=True)

    def validate(self, request: _Request, request_id: str, kind: str) -> _Response:
        errors: list[tuple[str, str]] = []
        _check_messages(request.body, errors)
        if errors:
            raise _invalid_body(errors)
        return _Response(200, {})

    # quota and statistics

    def quota(self, request: _Request, request_id: str) -> _Response:
        with self._fake._lock:
            if self._fake._quota_type == "none":
                return _Response(200, {"type": "none"})
            return _Response(200, {"type": "limited", "value": self._fake._quota_value})

    def consumption(self, request: _Request, request_id: str) -> _Response:
        with self._fake._lock:
            return _Response(200, {"totalUsage": self._fake._total_usage})

    def aggregation_info(self, request: _Request, request_id: str) -> _Response:
        with self._fake._lock:
            return _Response(200, {"numOfCustomAggregationUnits": len(self._fake._units_used)})

    def unit_statistics(self, request: _Request, request_id: str) -> _Response:
        params = request.query()
        errors: list[tuple[str, str]] = []
        unit = params.get("customAggregationUnit", [""])[0]
        if _UNIT_NAME.fullmatch(unit) is None:
            errors.append(("customAggregationUnit", 'Must match "^[a-zA-Z0-9_]{1,30}$"'))
        start = _parse_yyyymmdd(params, "from", errors)
        end = _parse_yyyymmdd(params, "to", errors)
        if start is not None and end is not None and not 0 <= (end - start).days <= MAX_AGGREGATION_DAYS:
            errors.append(("to", f"Must be between 'from' and {MAX_AGGREGATION_DAYS} days after it"))
        if errors:
            details = [{"message": message, "property": prop} for prop, message in errors]
            raise LineError(400, f"The request has {len(errors)} error(s)", details=details)
        with self._fake._lock:
            stats = self._fake._unit_stats.get(unit)
            if stats is None:
                return _Response(
                    200, {"overview": dict.fromkeys(_OVERVIEW_KEYS), "messages": [], "clicks": []}
                )
            return _Response(200, json.loads(json.dumps(stats)))

    # groups and profiles

    def group_summary(self, request: _Request, request_id: str, group_id: str) -> _Response:
        with self._fake._lock:
            group = self._fake._groups.get(group_id)
            if group is None:
                raise LineError(404, "Not found")
            return _Response(200, group.summary())

    def group_member_count(self, request: _Request, request_id: str, group_id: str) -> _Response:
        with self._fake._lock:
            group = self._fake._groups.get(group_id)
            if group is None:
                raise LineError(404, "Not found")
            return _Response(200, {"count": group.member_count})

    def profile(self, request: _Request, request_id: str, user_id: str) -> _Response:
        if _USER_ID.fullmatch(user_id) is None:
            raise LineError(404, "Not found")
        return _Response(
            200,
            {
                "userId": user_id,
                "displayName": "LINE ユーザー",
                "pictureUrl": f"https://profile.line-scdn.net/fake-user/{user_id}",
                "language": "ja",
            },
        )


# --- HTTP plumbing ------------------------------------------------------------------------


class _RequestHandler(KeepAliveHandler):
    server_version = "fake-line/1"
    server: FakeServer
    received_at = 0.0

    def parse_request(self) -> bool:
        # Called right after the request line was read: the benchmark measures lateness from here.
        self.received_at = time.time()
        return super().parse_request()

    def _serve(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        length = int(headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._write(
                413, {"message": "Request Entity Too Large"}, {"x-line-request-id": str(uuid.uuid4())}
            )
            return
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.close_connection = True
            self._write(411, {"message": "Length Required"}, {"x-line-request-id": str(uuid.uuid4())})
            return
        raw = self.rfile.read(length) if length > 0 else b""
        path, _, query = self.path.partition("?")
        request = _Request(self.command, path, query, headers, raw, self.received_at)
        if raw:
            try:
                request.body = json.loads(raw)
                request.parsed = True
            except ValueError:
                pass
        recorded, response_headers = self.server.fake._handle(request)
        self._write(recorded.status, recorded.response, response_headers)

    def _write(self, status: int, body: Any, headers: dict[str, str]) -> None:
        payload = json.dumps(body, ensure_ascii=False).encode()
        lines = [
            f"HTTP/1.1 {status} {_phrase(status)}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
        ]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + payload)
        except ConnectionError:
            self.close_connection = True  # the client gave up, e.g. during an injected delay

    def log_message(self, format: str, *args: Any) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s " + format, self.address_string(), *args)


# --- stand-alone sandbox server -----------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake LINE Messaging API for the automedia sandbox.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8082)
    parser.add_argument(
        "--token", action="append", help="accepted channel access token; repeat (default: any)"
    )
    parser.add_argument("--group", action="append", default=[], help="group id to register; repeat")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    fake = FakeLine(channel_tokens=set(args.token) if args.token else None, host=args.host, port=args.port)
    for group_id in args.group:
        fake.add_group(group_id)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with fake:
        logger.info("fake LINE at %s/", fake.base_url)
        with contextlib.suppress(KeyboardInterrupt):
            stopping.wait()
    logger.info("fake LINE stopped")


if __name__ == "__main__":
    main()

"""The fake LINE's limits and texts, and the records of what it was sent and answered."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from sandbox.http import phrase

Json = dict[str, Any]

PUSH = "/v2/bot/message/push"
MULTICAST = "/v2/bot/message/multicast"
REPLY = "/v2/bot/message/reply"
NARROWCAST = "/v2/bot/message/narrowcast"
RETRY_KEY_PATHS = frozenset({PUSH, MULTICAST, NARROWCAST})

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

MESSAGE_TYPES = (
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
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
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
HTTPS_FIELDS: dict[str, tuple[str, ...]] = {
    "image": ("originalContentUrl", "previewImageUrl"),
    "video": ("originalContentUrl", "previewImageUrl"),
    "audio": ("originalContentUrl",),
    "imagemap": ("baseUrl",),
}
OBJECT_FIELDS: dict[str, str] = {"template": "template", "flex": "contents"}
FLEX_CONTAINERS = frozenset({"bubble", "carousel"})
QUOTABLE_TYPES = frozenset({"text", "textV2", "sticker", "image", "video"})
# Message types that may quote another message (messaging-api.yml: TextMessage, TextMessageV2
# and StickerMessage have `quoteToken`).
QUOTING_TYPES = frozenset({"text", "textV2", "sticker"})
INVALID_QUOTE_TOKEN = "The quote token is invalid"

RETRY_KEY = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
USER_ID = re.compile(r"U[0-9a-zA-Z_-]+")
RECIPIENT_ID = re.compile(r"[UCR][0-9a-zA-Z_-]+")
UNIT_NAME = re.compile(r"[a-zA-Z0-9_]{1,30}")
YYYYMMDD = re.compile(r"[0-9]{8}")

OVERVIEW_KEYS = ("uniqueImpression", "uniqueClick", "uniqueMediaPlayed", "uniqueMediaPlayed100Percent")

FAULT_MESSAGES = {
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

    def response(self) -> LineReply:
        return LineReply(self.status, self.body, self.headers)


def invalid_body(errors: list[tuple[str, str]]) -> LineError:
    details = [{"message": message, "property": prop} for prop, message in errors]
    return LineError(400, f"The request body has {len(errors)} error(s)", details=details)


@dataclass(slots=True)
class Fault:
    status: int
    count: int
    path_prefix: str | None
    headers: dict[str, str]
    body: Any
    delay: float
    then_accept: bool

    def response(self) -> LineReply:
        body = self.body
        if body is None:
            body = {"message": FAULT_MESSAGES.get(self.status) or phrase(self.status)}
        return LineReply(self.status, body, dict(self.headers))


@dataclass(slots=True)
class Chaos:
    """Random faults on every request under ``path_prefix``, drawn from a seeded RNG: a
    ``fail_rate`` share answers 500 and sends nothing; a ``hang_rate`` share is accepted (sent,
    recorded at once) and its answer held back ``hang_seconds``, so a client with a shorter
    timeout sees a timeout although LINE took the message. Every other answer under the
    prefix comes ``latency_seconds`` after its request was recorded (a real platform's
    round trip), so a worker killed meanwhile has work in flight."""

    fail_rate: float
    hang_rate: float
    hang_seconds: float
    path_prefix: str
    rng: random.Random
    latency_seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=lambda: {"ok": 0, "fail": 0, "hang": 0})

    def draw(self, path: str) -> str | None:
        """ "fail", "hang", "ok", or None when the path is not under the prefix."""
        if not path.startswith(self.path_prefix):
            return None
        roll = self.rng.random()
        outcome = (
            "fail" if roll < self.fail_rate else "hang" if roll < self.fail_rate + self.hang_rate else "ok"
        )
        self.counts[outcome] += 1
        return outcome


@dataclass(slots=True)
class Accepted:
    at: float
    request_id: str
    sent_messages: list[Json] | None


@dataclass(slots=True)
class Group:
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
class LineRequest:
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
class LineReply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    accepted: bool = False
    hang: float = 0.0  # seconds to hold the answer back once it is recorded (Chaos)

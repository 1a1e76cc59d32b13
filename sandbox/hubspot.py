"""In-memory fake of the HubSpot APIs automedia uses: contacts, notes, single-send email.

Follows HubSpot's docs (https://developers.hubspot.com/docs/api-reference/latest/marketing/single-send/guide,
https://developers.hubspot.com/docs/api-reference/crm-notes-v3/guide,
https://developers.hubspot.com/docs/api-reference/error-handling) and the official SDK
(``HubSpot/hubspot-api-python``). It keeps server-side state (an outbox keyed by ``sendId``,
notes, contacts, rate-limit windows) so that publish-once tests can count what was really
sent, including when a call succeeded but its answer was lost. What it models, and the
fake's own choices where HubSpot is UNCONFIRMED:

- Static Bearer tokens (``tokens``; None = any); ``revoke`` makes one answer 401
  ``INVALID_AUTHENTICATION``.
- Every answer carries ``X-HubSpot-RateLimit-Max / -Remaining / -Interval-Milliseconds``
  and ``-Daily / -Daily-Remaining`` for a rolling window of ``burst`` calls per
  ``interval_ms`` on ``clock``; over it → 429 ``RATE_LIMITS`` (policy TEN_SECONDLY_ROLLING).
- Contacts (``add_contact``) listed page by page (``after`` cursor) with the asked properties.
- Notes: ``POST /crm/v3/objects/notes`` creates one (no idempotency); the search endpoint
  supports ``hs_note_body CONTAINS_TOKEN``; batch association to contacts is idempotent.
- Request bodies checked against HubSpot's published OpenAPI (as the official SDK's
  generated models carry it): a CRM create (``SimplePublicObjectInputForCreate``) needs
  ``properties`` (strings) and ``associations`` (a list); a single-send
  (``PublicSingleSendRequestEgg``,
  https://developers.hubspot.com/docs/api-reference/2026-03/marketing/transactional-emails/create-transactional-email)
  needs ``emailId`` (integer), ``message`` (``to`` and the documented override fields),
  ``contactProperties`` (strings) and ``customProperties`` (no arrays: "Custom properties
  do not currently support arrays"). Anything else answers 400 ``VALIDATION_ERROR``.
- Portal validation rules on CRM writes (from the 2026-09 API versions,
  https://developers.hubspot.com/changelog/crm-api-write-validation-enforcement):
  ``required_note_properties`` stands for the create form's required fields; a note
  created without one answers 400 ``VALIDATION_ERROR`` and creates nothing.
- ``POST /marketing/v4/email/single-send``: a new ``sendId`` is one email in ``outbox``
  (PENDING); a repeated ``sendId`` answers ``sendResult: IDEMPOTENT_IGNORE`` and sends
  nothing; an address in ``unsubscribed`` answers ``PREVIOUSLY_UNSUBSCRIBED_PORTAL``.
"""

from __future__ import annotations

import itertools
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sandbox.fakeserver import ApiError, FakeServer, Json, Reply, Request

CONTACTS = "/crm/v3/objects/contacts"
NOTES = "/crm/v3/objects/notes"
NOTES_SEARCH = "/crm/v3/objects/notes/search"
ASSOCIATE = "/crm/v4/associations/notes/contacts/batch/associate/default"
SINGLE_SEND = "/marketing/v4/email/single-send"
ACCOUNT_DETAILS = "/account-info/v3/details"


def hubspot_error(status: int, message: str, category: str, **extra: Any) -> ApiError:
    body = {
        "status": "error",
        "message": message,
        "correlationId": str(uuid.uuid4()),
        "category": category,
        **extra,
    }
    return ApiError(status, body)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Email:
    send_id: str
    email_id: int
    to: str
    custom_properties: Json
    status_id: str = field(default_factory=lambda: str(uuid.uuid4()))


class FakeHubSpot(FakeServer):
    name = "fake-hubspot"

    def __init__(
        self,
        *,
        tokens: set[str] | None = None,
        burst: int = 100,
        interval_ms: int = 10_000,
        daily: int = 250_000,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._tokens = None if tokens is None else set(tokens)
        self.burst, self.interval_ms, self.daily = burst, interval_ms, daily
        self.contacts: dict[str, Json] = {}
        self.notes: dict[str, Json] = {}
        self.associations: dict[str, set[str]] = {}
        self.outbox: dict[str, Email] = {}
        self.unsubscribed: set[str] = set()
        self.required_note_properties: set[str] = set()
        self.portal_id = 24_000_000 + secrets.randbelow(10**6)
        self.time_zone = "Asia/Tokyo"  # the account's time zone setting
        self._window: list[float] = []
        self._daily_used = 0
        self._ids = itertools.count(50_000_000_000 + secrets.randbelow(10**9))
        super().__init__(host=host, port=port)

    # -- setup -----------------------------------------------------------------------

    def add_contact(
        self, email: str, tags: list[str] | None = None, *, tag_property: str = "automedia_tags"
    ) -> str:
        with self._lock:
            contact_id = str(next(self._ids))
            properties = {"email": email, tag_property: ";".join(tags or []), "hs_object_id": contact_id}
            self.contacts[contact_id] = {"id": contact_id, "properties": properties}
        return contact_id

    def revoke(self, token: str) -> None:
        with self._lock:
            self._tokens = (self._tokens or set()) - {token} if self._tokens is not None else set()

    def fail_hubspot(self, status: int, message: str, category: str, **fault: Any) -> None:
        body = {
            "status": "error",
            "message": message,
            "correlationId": str(uuid.uuid4()),
            "category": category,
        }
        self.fail_next(status, body=body, **fault)

    # -- FakeServer hooks ------------------------------------------------------------

    def routes(self):
        return [
            ("GET", CONTACTS, self._contacts),
            ("POST", NOTES, self._note_create),
            ("POST", NOTES_SEARCH, self._note_search),
            ("POST", ASSOCIATE, self._associate),
            ("POST", SINGLE_SEND, self._single_send),
            ("GET", ACCOUNT_DETAILS, self._account_details),
        ]

    def authenticate(self, request: Request) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip()
        with self._lock:
            if (
                scheme.lower() != "bearer"
                or not token
                or (self._tokens is not None and token not in self._tokens)
            ):
                raise hubspot_error(
                    401,
                    "Authentication credentials not found. This API supports OAuth 2.0 authentication.",
                    "INVALID_AUTHENTICATION",
                )
            self._count()

    def error_body(self, status: int) -> Any:
        categories = {
            401: "INVALID_AUTHENTICATION",
            403: "MISSING_SCOPES",
            429: "RATE_LIMITS",
            404: "OBJECT_NOT_FOUND",
        }
        return {
            "status": "error",
            "message": "error",
            "correlationId": str(uuid.uuid4()),
            "category": categories.get(status, "INTERNAL_ERROR" if status >= 500 else "VALIDATION_ERROR"),
        }

    def decorate(self, request: Request, reply: Reply) -> None:
        with self._lock:
            now = self.clock()
            used = len([t for t in self._window if t > now - self.interval_ms / 1000])
            reply.headers.update(
                {
                    "X-HubSpot-RateLimit-Max": str(self.burst),
                    "X-HubSpot-RateLimit-Remaining": str(max(0, self.burst - used)),
                    "X-HubSpot-RateLimit-Interval-Milliseconds": str(self.interval_ms),
                    "X-HubSpot-RateLimit-Daily": str(self.daily),
                    "X-HubSpot-RateLimit-Daily-Remaining": str(max(0, self.daily - self._daily_used)),
                    "X-HubSpot-Correlation-Id": str((reply.body or {}).get("correlationId") or uuid.uuid4())
                    if isinstance(reply.body, dict)
                    else str(uuid.uuid4()),
                }
            )

    def _count(self) -> None:
        now = self.clock()
        self._window = [t for t in self._window if t > now - self.interval_ms / 1000]
        if len(self._window) >= self.burst or self._daily_used >= self.daily:
            policy = "DAILY" if self._daily_used >= self.daily else "TEN_SECONDLY_ROLLING"
            raise hubspot_error(
                429, f"You have reached your {policy.lower()} limit.", "RATE_LIMITS", policyName=policy
            )
        self._window.append(now)
        self._daily_used += 1

    # -- contacts and notes ------------------------------------------------------------

    def _account_details(self, request: Request) -> Reply:
        """https://developers.hubspot.com/docs/api-reference/legacy/account/account-information/get-account-details"""
        minutes = (
            int((datetime.now(ZoneInfo(self.time_zone)).utcoffset() or timedelta()).total_seconds()) // 60
        )
        body = {
            "portalId": self.portal_id,
            "accountType": "STANDARD",
            "timeZone": self.time_zone,
            "companyCurrency": "JPY",
            "additionalCurrencies": [],
            "utcOffset": f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}",
            "utcOffsetMilliseconds": minutes * 60_000,
            "uiDomain": "app.hubspot.com",
            "dataHostingLocation": "na1",
        }
        return Reply(200, body)

    def _contacts(self, request: Request) -> Reply:
        limit = min(int(request.param("limit", "10") or 10), 100)
        after = int(request.param("after", "0") or 0)
        wanted = [p for p in request.param("properties").split(",") if p]
        with self._lock:
            ordered = sorted(self.contacts.values(), key=lambda c: int(c["id"]))
        page = ordered[after : after + limit]
        results = [
            {
                "id": c["id"],
                "properties": {k: c["properties"].get(k) for k in wanted + ["hs_object_id"]},
                "archived": False,
            }
            for c in page
        ]
        body: Json = {"results": results}
        if after + limit < len(ordered):
            body["paging"] = {"next": {"after": str(after + limit)}}
        return Reply(200, body)

    def _note_create(self, request: Request) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        problem = _create_problem(body)
        if problem:
            raise hubspot_error(400, f"Invalid input JSON: {problem}", "VALIDATION_ERROR")
        properties = dict(body["properties"])
        missing = sorted(name for name in self.required_note_properties if not properties.get(name))
        if missing:
            raise hubspot_error(
                400,
                f"Property values were not valid: required properties are missing: {', '.join(missing)}",
                "VALIDATION_ERROR",
            )
        if not properties.get("hs_timestamp"):
            raise hubspot_error(
                400, "Property values were not valid: hs_timestamp is required", "VALIDATION_ERROR"
            )
        with self._lock:
            note_id = str(next(self._ids))
            self.notes[note_id] = {
                "id": note_id,
                "properties": properties,
                "createdAt": _now_iso(),
                "archived": False,
            }
            self.associations[note_id] = set()
        return Reply(201, self.notes[note_id], effect=True)

    def _note_search(self, request: Request) -> Reply:
        tokens = [
            f.get("value", "")
            for group in (request.body or {}).get("filterGroups") or []
            for f in group.get("filters") or []
            if f.get("propertyName") == "hs_note_body" and f.get("operator") == "CONTAINS_TOKEN"
        ]
        with self._lock:
            found = [
                n
                for n in self.notes.values()
                if tokens and all(t in n["properties"].get("hs_note_body", "") for t in tokens)
            ]
        return Reply(200, {"total": len(found), "results": found})

    def _associate(self, request: Request) -> Reply:
        inputs = (request.body or {}).get("inputs") or []
        with self._lock:
            for item in inputs:
                note, contact = str(item["from"]["id"]), str(item["to"]["id"])
                if note not in self.notes or contact not in self.contacts:
                    raise hubspot_error(400, f"Object {note} or {contact} not found", "VALIDATION_ERROR")
                self.associations[note].add(contact)
        return Reply(
            200,
            {"status": "COMPLETE", "results": inputs, "startedAt": _now_iso(), "completedAt": _now_iso()},
            effect=bool(inputs),
        )

    # -- email -----------------------------------------------------------------------

    def _single_send(self, request: Request) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        problem = _single_send_problem(body)
        if problem:
            raise hubspot_error(400, f"Invalid input JSON: {problem}", "VALIDATION_ERROR")
        message = body["message"]
        send_id, to = str(message.get("sendId") or ""), message["to"]
        with self._lock:
            sent = self.outbox.get(send_id) if send_id else None
            if sent is not None:
                return Reply(
                    200,
                    {
                        "status": "COMPLETE",
                        "sendResult": "IDEMPOTENT_IGNORE",
                        "statusId": sent.status_id,
                        "requestedAt": _now_iso(),
                    },
                )
            if to in self.unsubscribed:
                return Reply(
                    200,
                    {
                        "status": "COMPLETE",
                        "sendResult": "PREVIOUSLY_UNSUBSCRIBED_PORTAL",
                        "statusId": str(uuid.uuid4()),
                    },
                )
            email = Email(
                send_id or str(uuid.uuid4()), body["emailId"], to, dict(body.get("customProperties") or {})
            )
            self.outbox[email.send_id] = email
        return Reply(
            200, {"status": "PENDING", "statusId": email.status_id, "requestedAt": _now_iso()}, effect=True
        )


MESSAGE_FIELDS = {"to": str, "from": str, "sendId": str, "replyTo": list, "cc": list, "bcc": list}


def _strings(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _create_problem(body: Json) -> str:
    """What a CRM create body lacks against SimplePublicObjectInputForCreate; empty when valid."""
    if not _strings(body.get("properties")):
        return "`properties` (an object of strings) is required"
    associations = body.get("associations")
    if not isinstance(associations, list):
        return "`associations` (a list, empty for none) is required"
    for item in associations:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("to"), dict)
            and isinstance(item.get("types"), list)
        ):
            return "each of `associations` needs `to` and `types`"
    return ""


def _single_send_problem(body: Json) -> str:
    """What a single-send body lacks against PublicSingleSendRequestEgg; empty when valid."""
    email_id = body.get("emailId")
    if isinstance(email_id, bool) or not isinstance(email_id, int):
        return "`emailId` (an integer) is required"
    message = body.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("to"), str) or not message["to"]:
        return "`message.to` is required"
    for name, value in message.items():
        kind = MESSAGE_FIELDS.get(name)
        if kind is None:
            return f"`message.{name}` is not a field of the message"
        if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
            return f"`message.{name}` must be {'a list of strings' if kind is list else 'a string'}"
    if not _strings(body.get("contactProperties")):
        return "`contactProperties` (an object of strings, empty for none) is required"
    custom = body.get("customProperties")
    if not isinstance(custom, dict) or any(isinstance(v, list) for v in custom.values()):
        return "`customProperties` (an object; arrays are not supported) is required"
    return ""

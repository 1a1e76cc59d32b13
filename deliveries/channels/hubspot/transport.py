"""The one HubSpot API client: contacts, CRM notes and marketing single-send email.

A private-app token or service key is a static Bearer token; a 401 means it was revoked or
rotated (https://developers.hubspot.com/docs/apps/legacy-apps/private-apps/overview,
https://developers.hubspot.com/changelog/service-keys). Errors are
`{"status", "message", "category", "correlationId"}`, every field optional
(https://developers.hubspot.com/docs/api-reference/error-handling). The v3/v4 paths are
supported until 2027 (https://developers.hubspot.com/changelog/legacy-apis-and-legacy-apps-whats-going-unsupported-and-when);
the base URL is a setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from core.transport import parse_retry_after
from deliveries.channels.platform_transport import PlatformError, PlatformTransport, json_body

CONTACTS = "/crm/v3/objects/contacts"
NOTES = "/crm/v3/objects/notes"
NOTES_SEARCH = "/crm/v3/objects/notes/search"
NOTE_CONTACT_ASSOCIATE = "/crm/v4/associations/notes/contacts/batch/associate/default"
SINGLE_SEND = "/marketing/v4/email/single-send"
ACCOUNT_DETAILS = "/account-info/v3/details"
PAGE_SIZE = 100
ASSOCIATE_BATCH = 100
DEFAULT_INTERVAL_MS = 10_000


@dataclass
class RateState:
    """The last answer's X-HubSpot-RateLimit-* headers (None = not sent), read after every call so
    the caller can pace itself. `-Daily-Remaining` is HubSpot's
    (https://developers.hubspot.com/changelog/2018-11-06-rate-limit-information-headers-will-be-included-in-http-responses);
    no HubSpot page read names `-Remaining` and `-Interval-Milliseconds`, so they only ever
    delay a call: when absent nothing is paced, and a 429 waits the documented 10 seconds."""

    remaining: int | None = None
    interval_ms: int = DEFAULT_INTERVAL_MS
    daily_remaining: int | None = None

    @classmethod
    def from_headers(cls, headers: httpx.Headers) -> RateState:
        return cls(
            remaining=_int(headers.get("X-HubSpot-RateLimit-Remaining")),
            interval_ms=_int(headers.get("X-HubSpot-RateLimit-Interval-Milliseconds")) or DEFAULT_INTERVAL_MS,
            daily_remaining=_int(headers.get("X-HubSpot-RateLimit-Daily-Remaining")),
        )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def hubspot_error(response: httpx.Response) -> PlatformError:
    try:
        data = response.json()
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    status = response.status_code
    details = "; ".join(e.get("message", "") for e in data.get("errors") or [] if isinstance(e, dict))
    text = " / ".join(p for p in (data.get("message") or response.reason_phrase, details) if p)
    label = f"HubSpot のエラー（{status}{'、' + data['category'] if data.get('category') else ''}）: {text}"
    common: dict[str, Any] = {
        "status": status,
        "request_id": str(data.get("correlationId") or ""),
        "code": str(data.get("category") or ""),
    }
    if status == 401:
        return PlatformError(
            f"認証エラー: HubSpot のトークンが無効です（失効または再発行）。{label}",
            permanent=True,
            auth=True,
            **common,
        )
    if status == 403:
        return PlatformError(f"権限（スコープ）がありません: {label}", permanent=True, **common)
    # From the 2026-09 API versions CRM writes meet the portal's own rules, a configuration a
    # person fixes in HubSpot (https://developers.hubspot.com/changelog/crm-api-write-validation-enforcement).
    if status == 400 and data.get("category") == "VALIDATION_ERROR":
        return PlatformError(
            "HubSpot の設定エラー（VALIDATION_ERROR）: ポータルの検証ルール（条件付き必須プロパティ、"
            "レコード作成フォームの必須項目、関連付けの権限）またはプロパティの検証に合いません。"
            f"HubSpot の設定かテンプレを直してから再承認してください。{label}",
            permanent=True,
            **common,
        )
    if status == 429:
        interval = RateState.from_headers(response.headers).interval_ms / 1000
        retry_after = parse_retry_after(response) or interval
        return PlatformError(f"レート制限: {label}", permanent=False, retry_after=retry_after, **common)
    if status >= 500:
        return PlatformError(f"一時的なエラー: {label}", permanent=False, unclear=True, **common)
    return PlatformError(f"HubSpot が受け付けませんでした: {label}", permanent=True, **common)


class HubSpotTransport(PlatformTransport):
    service = "hubspot"
    request_id_header = "x-hubspot-correlation-id"

    def __init__(
        self, *, token: str, base_url: str | None = None, timeout: float | None = None, transport=None
    ):
        super().__init__(
            base_url=base_url or settings.HUBSPOT_API_BASE_URL,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout or settings.PLATFORM_TIMEOUT_SECONDS,
            transport=transport,
        )
        self.rate = RateState()

    def request(self, method: str, path: str, **kwargs) -> tuple[httpx.Response, int]:
        response, duration = super().request(method, path, **kwargs)
        self.rate = RateState.from_headers(response.headers)
        return response, duration

    def account_details(self) -> dict:
        """`portalId`, `accountType`, `timeZone`, …: the smallest call that proves the token
        (https://developers.hubspot.com/docs/api-reference/legacy/account/account-information/get-account-details)."""
        return self._call("GET", ACCOUNT_DETAILS)

    def contacts_page(
        self, *, properties: list[str], after: str | None = None
    ) -> tuple[list[dict], str | None]:
        params: dict[str, Any] = {"limit": PAGE_SIZE, "properties": ",".join(properties), "archived": "false"}
        if after:
            params["after"] = after
        data = self._call("GET", CONTACTS, params=params)
        next_after = ((data.get("paging") or {}).get("next") or {}).get("after")
        return list(data.get("results") or []), next_after

    def note_create(self, *, body: str, timestamp: str) -> str:
        """A CRM create requires `associations` (HubSpot's OpenAPI, `SimplePublicObjectInputForCreate`
        in HubSpot/hubspot-api-python), so the note is created with none and associated after.
        Notes have no idempotency key: the body carries a marker `note_find` looks for."""
        properties = {"hs_note_body": body, "hs_timestamp": timestamp}
        body = {"properties": properties, "associations": []}
        return str(self._call("POST", NOTES, json=body)["id"])

    def note_find(self, marker: str) -> str | None:
        """The note whose body carries `marker` (a single token), if HubSpot has indexed it."""
        query = {
            "filterGroups": [
                {"filters": [{"propertyName": "hs_note_body", "operator": "CONTAINS_TOKEN", "value": marker}]}
            ],
            "properties": ["hs_note_body"],
            "limit": 1,
        }
        results = self._call("POST", NOTES_SEARCH, json=query).get("results") or []
        return str(results[0]["id"]) if results else None

    def note_associate(self, note_id: str, contact_ids: list[str]) -> None:
        """Associating again is harmless, so a retry of a batch is safe."""
        inputs = [{"from": {"id": note_id}, "to": {"id": c}} for c in contact_ids]
        self._call("POST", NOTE_CONTACT_ASSOCIATE, json={"inputs": inputs})

    def single_send(
        self, *, email_id: int, to: str, send_id: str, custom_properties: dict, sender: dict
    ) -> dict:
        """At most one email per `sendId`; a repeat answers `sendResult: IDEMPOTENT_IGNORE`.
        `contactProperties` is required by the request's OpenAPI although the guide's examples
        leave it out (https://developers.hubspot.com/docs/api-reference/2026-03/marketing/transactional-emails/create-transactional-email)."""
        message = {"to": to, "sendId": send_id, **sender}
        body = {
            "emailId": email_id,
            "message": message,
            "contactProperties": {},
            "customProperties": custom_properties,
        }
        return self._call("POST", SINGLE_SEND, json=body)

    def _call(self, method: str, path: str, **kwargs) -> dict:
        response, _ = self.request(method, path, **kwargs)
        if not response.is_success:
            raise hubspot_error(response)
        return json_body(response) if response.content else {}

"""The one LINE Messaging API client (push, multicast, narrowcast and its audiences, reply,
validate, quota, coupons).

Facts from https://developers.line.biz/en/docs/messaging-api/retrying-api-request/,
line/line-openapi (https://github.com/line/line-openapi, messaging-api.yml) and the
line/line-bot-sdk-python README: `X-Line-Retry-Key` (a UUID) on push,
multicast and narrowcast makes a retry safe — LINE answers 409 with `x-line-accepted-request-id`
when it already accepted that key, which counts as success. Multicast takes at
most 500 user ids; `customAggregationUnits` names a unit for the insight API.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any
from urllib.parse import quote

import httpx
from django.conf import settings

from core.http import ClientCache
from core.transport import HttpTransport, SendResult, TransportError

MULTICAST_MAX = 500
AUDIENCE_IDS_MAX = 10_000
VALIDATE_KINDS = frozenset({"push", "multicast", "broadcast", "narrowcast", "reply"})
MAX_AGGREGATION_DAYS = 30
UNIT_PATTERN = re.compile(r"^[a-zA-Z0-9_]{1,30}$")
# A coupon id as LINE writes them (a ULID in its docs' example, `01JYNW8JMQVFBNWF1APF8Z3FS7`),
# loosely: a manager's text goes into a URL path only as one plain segment.
COUPON_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
COUPON_PAGE, COUPON_PAGES = 100, 10  # listCoupon's `limit` is 1..100


def aggregation_unit(issue_key: str) -> str:
    """A customAggregationUnits name for a task: `^[a-zA-Z0-9_]{1,30}$`."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", issue_key)[-30:]


def push_body(*, to: str, messages: list[dict], unit: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"to": to, "messages": messages}
    if unit:
        body["customAggregationUnits"] = [unit]
    return body


def multicast_body(*, to: list[str], messages: list[dict], unit: str | None = None) -> dict[str, Any]:
    if not 1 <= len(to) <= MULTICAST_MAX:
        raise ValueError(f"multicast takes 1..{MULTICAST_MAX} recipients, got {len(to)}")
    body: dict[str, Any] = {"to": to, "messages": messages}
    if unit:
        body["customAggregationUnits"] = [unit]
    return body


def _json(response: httpx.Response) -> dict:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def sent_messages_of(body: dict) -> list[dict]:
    """`sentMessages` of a push / reply answer as [{id, quoteToken?}] (messaging-api.yml
    SentMessage: quoteToken "only included when a message object that can be specified as a
    quote target was sent as a push or reply message"); [] for a multicast's `{}`."""
    sent = body.get("sentMessages")
    if not isinstance(sent, list):
        return []
    return [
        {k: str(m[k]) for k in ("id", "quoteToken") if isinstance(m.get(k), str | int)}
        for m in sent
        if isinstance(m, dict)
    ]


def _reason(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    details = "; ".join(f"{d.get('property', '')}: {d.get('message', '')}" for d in data.get("details") or [])
    return " / ".join(p for p in (data.get("message", ""), details) if p)


class LineTransport(HttpTransport):
    service = "line"

    def __init__(
        self, *, token: str, base_url: str | None = None, timeout: float | None = None, transport=None
    ):
        super().__init__(
            base_url=base_url or settings.LINE_API_BASE_URL,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout or settings.LINE_TIMEOUT_SECONDS,
            transport=transport,
        )

    def push(self, *, to: str, messages: list[dict], retry_key: str, unit: str | None = None) -> SendResult:
        return self._send("/v2/bot/message/push", push_body(to=to, messages=messages, unit=unit), retry_key)

    def multicast(
        self, *, to: list[str], messages: list[dict], retry_key: str, unit: str | None = None
    ) -> SendResult:
        return self._send(
            "/v2/bot/message/multicast", multicast_body(to=to, messages=messages, unit=unit), retry_key
        )

    def narrowcast(
        self, *, messages: list[dict], recipient: dict, retry_key: str, limit: dict | None = None
    ) -> SendResult:
        """Accepted with 202 and the request id in `x-line-request-id` (messaging-api.yml
        `narrowcast`); the delivery itself runs later (`narrowcast_progress`)."""
        body: dict[str, Any] = {"messages": messages, "recipient": recipient}
        if limit:
            body["limit"] = limit
        return self._send("/v2/bot/message/narrowcast", body, retry_key)

    def narrowcast_progress(self, request_id: str) -> SendResult:
        """`NarrowcastProgressResponse`: phase, counts, errorCode once it failed."""
        return self._call("GET", "/v2/bot/message/progress/narrowcast", params={"requestId": request_id})

    # Audiences for uploading user ids (line-openapi manage-audience.yml): JSON bodies take
    # at most AUDIENCE_IDS_MAX ids per request.

    def audience_create(self, *, description: str, user_ids: list[str]) -> SendResult:
        body = {"description": description, "audiences": [{"id": u} for u in user_ids]}
        return self._call("POST", "/v2/bot/audienceGroup/upload", json=body)

    def audience_add(self, *, audience_id: int, user_ids: list[str]) -> SendResult:
        body = {"audienceGroupId": audience_id, "audiences": [{"id": u} for u in user_ids]}
        return self._call("PUT", "/v2/bot/audienceGroup/upload", json=body)

    def audience(self, audience_id: int) -> SendResult:
        return self._call("GET", f"/v2/bot/audienceGroup/{audience_id}")

    def audience_delete(self, audience_id: int) -> SendResult:
        return self._call("DELETE", f"/v2/bot/audienceGroup/{audience_id}")

    def _call(self, method: str, path: str, **kwargs) -> SendResult:
        response, duration = self.request(method, path, **kwargs)
        request_id = response.headers.get("x-line-request-id", "")
        if not response.is_success:
            self.raise_for(response, _reason(response), request_id)
        return SendResult(response.status_code, request_id, body=_json(response), duration_ms=duration)

    def reply(self, *, reply_token: str, messages: list[dict]) -> SendResult:
        response, duration = self.request(
            "POST", "/v2/bot/message/reply", json={"replyToken": reply_token, "messages": messages}
        )
        return self._result(response, duration)

    def _send(self, path: str, body: dict, retry_key: str) -> SendResult:
        response, duration = self.request("POST", path, json=body, headers={"X-Line-Retry-Key": retry_key})
        if response.status_code == 409 and response.headers.get("x-line-accepted-request-id"):
            accepted = response.headers["x-line-accepted-request-id"]
            body = _json(response)  # `sentMessages`, if LINE repeats them, are kept
            return SendResult(
                status=409, request_id=accepted, duplicate=True, body=body, duration_ms=duration
            )
        return self._result(response, duration)

    def _result(self, response: httpx.Response, duration: int) -> SendResult:
        request_id = response.headers.get("x-line-request-id", "")
        if not response.is_success:
            self.raise_for(response, _reason(response), request_id)
        body = response.json() if response.content else {}
        return SendResult(status=response.status_code, request_id=request_id, body=body, duration_ms=duration)

    def validate(self, *, kind: str, messages: list[dict]) -> list[dict]:
        """LINE's verdict on `messages` for a send kind (push, multicast, …): [] when LINE
        accepts them, else its `details` ({property, message} each). Only a 400 is a verdict;
        anything else (5xx, timeout, 401) raises TransportError: LINE could not be asked.
        messaging-api.yml: `POST /v2/bot/message/validate/{kind}` with `ValidateMessageRequest`."""
        if kind not in VALIDATE_KINDS:
            raise ValueError(f"no validate endpoint for {kind!r}")
        response, _ = self.request("POST", f"/v2/bot/message/validate/{kind}", json={"messages": messages})
        if response.status_code == 400:
            try:
                data = response.json()
            except ValueError:
                data = {}
            details = [d for d in data.get("details") or [] if isinstance(d, dict)]
            return details or [{"property": "", "message": data.get("message") or response.text[:300]}]
        if not response.is_success:
            self.raise_for(response, _reason(response))
        return []

    def quota(self) -> dict:
        return self._get("/v2/bot/message/quota")

    def consumption(self) -> dict:
        return self._get("/v2/bot/message/quota/consumption")

    def group_summary(self, group_id: str) -> dict:
        return self._get(f"/v2/bot/group/{group_id}/summary")

    def member_count(self, source_id: str, *, room: bool = False) -> int:
        """Members of a group or room, the bot excluded (messaging-api.yml GroupMemberCountResponse)."""
        return int(self._get(f"/v2/bot/{'room' if room else 'group'}/{source_id}/members/count")["count"])

    def profile(self, user_id: str) -> dict:
        return self._get(f"/v2/bot/profile/{user_id}")

    def unit_statistics(self, *, unit: str, since: date, until: date) -> dict:
        """Per-unit statistics of push/multicast (insight.yml getStatisticsPerUnit).

        `since`/`until` are dates in UTC+9; LINE accepts `to` at most 30 days after `from`.
        """
        if not 0 <= (until - since).days <= MAX_AGGREGATION_DAYS:
            raise ValueError(f"until must be 0..{MAX_AGGREGATION_DAYS} days after since")
        params = {"customAggregationUnit": unit, "from": f"{since:%Y%m%d}", "to": f"{until:%Y%m%d}"}
        return self._get("/v2/bot/insight/message/event/aggregation", **params)

    # Coupons (messaging-api.yml createCoupon, closeCoupon, getCouponDetail, listCoupon;
    # https://developers.line.biz/en/reference/messaging-api/#get-coupon, #get-coupons-list).
    # The account's coupons include those made in LINE Official Account Manager.

    def coupon(self, coupon_id: str) -> dict | None:
        """`CouponResponse` (`status` DRAFT / RUNNING / CLOSED, `endTimestamp` after which it
        cannot be used); None when the account has no such coupon (404, or an id that is no
        path segment, which is not sent)."""
        if not COUPON_ID.fullmatch(coupon_id or ""):
            return None
        response, _ = self.request("GET", f"/v2/bot/coupon/{coupon_id}")
        if response.status_code == 404:
            return None
        if not response.is_success:
            self.raise_for(response, _reason(response))
        return _json(response)

    def coupons(self, *, status: str = "RUNNING") -> list[dict]:
        """The account's coupons in `status` (`CouponListResponse`: couponId, title), page by
        page: an answer's `next` is the next request's `start`; at most COUPON_PAGES pages."""
        found: list[dict] = []
        params: dict[str, Any] = {"status": status, "limit": COUPON_PAGE}
        for _ in range(COUPON_PAGES):
            page = self._get("/v2/bot/coupon", **params)
            found += [c for c in page.get("items") or [] if isinstance(c, dict) and c.get("couponId")]
            if not isinstance(page.get("next"), str) or not page["next"]:
                break
            params["start"] = page["next"]
        return found

    def coupon_create(self, body: dict) -> str:
        """The new coupon's `couponId` (`CouponCreateRequest` → `CouponCreateResponse`)."""
        response, _ = self.request("POST", "/v2/bot/coupon", json=body)
        if not response.is_success:
            self.raise_for(response, _reason(response))
        coupon_id = _json(response).get("couponId")
        if not isinstance(coupon_id, str) or not coupon_id:
            raise TransportError(
                "LINE の応答に couponId がありません。", permanent=True, status=response.status_code
            )
        return coupon_id

    def coupon_close(self, coupon_id: str) -> bool:
        """Close a coupon; False when LINE answers 410 Gone (closed or expired already)."""
        response, _ = self.request("PUT", f"/v2/bot/coupon/{quote(coupon_id, safe='')}/close")
        if response.status_code == 410:
            return False
        if not response.is_success:
            self.raise_for(response, _reason(response))
        return True

    # The channel itself (messaging-api.yml getBotInfo, getWebhookEndpoint, setWebhookEndpoint,
    # testWebhookEndpoint; https://developers.line.biz/en/reference/messaging-api/#get-bot-info,
    # #get-webhook-endpoint-information, #set-webhook-endpoint-url, #test-webhook-endpoint).

    def bot_info(self) -> dict:
        """`userId`, `basicId`, `displayName`, …: proves the token and names its channel."""
        return self._get("/v2/bot/info")

    def webhook_endpoint(self) -> dict:
        """`endpoint` and `active` (whether LINE sends webhooks at all)."""
        return self._get("/v2/bot/channel/webhook/endpoint")

    def webhook_endpoint_set(self, endpoint: str) -> None:
        self._call("PUT", "/v2/bot/channel/webhook/endpoint", json={"endpoint": endpoint})

    def webhook_test(self, endpoint: str | None = None) -> dict:
        """LINE posts a test event to the endpoint: `success`, `statusCode`, `reason`, `detail`."""
        return self._call(
            "POST", "/v2/bot/channel/webhook/test", json={"endpoint": endpoint} if endpoint else {}
        ).body

    def _get(self, path: str, **params) -> dict:
        response, _ = self.request("GET", path, params=params or None)
        if not response.is_success:
            self.raise_for(response, _reason(response))
        return response.json()


__all__ = ["LineTransport", "TransportError", "SendResult", "aggregation_unit", "push_body", "multicast_body"]


_shared = ClientCache(lambda base_url, token: LineTransport(token=token, base_url=base_url))


def line_transport(token: str) -> LineTransport:
    """The worker process's kept-alive transport for this channel token (never close it)."""
    return _shared.get(settings.LINE_API_BASE_URL, token)

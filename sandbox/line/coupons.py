"""The fake LINE's coupon endpoints (messaging-api.yml createCoupon, listCoupon,
getCouponDetail, closeCoupon): a create body is checked against `CouponCreateRequest`, and
answers take the shapes `CouponCreateResponse`, `MessagingApiPagerCouponListResponse` and
`CouponResponse`. Closing a closed coupon answers 410 Gone, as the spec lists it."""

from __future__ import annotations

import secrets
import time

from sandbox.line.records import Json, LineError, LineReply, LineRequest, invalid_body
from sandbox.line.spec import spec_errors

ULID_CHARS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PAGE_DEFAULT, PAGE_MAX = 20, 100


def _coupon_id() -> str:
    return "".join(secrets.choice(ULID_CHARS) for _ in range(26))


class LineCoupons:
    """The channel's coupons, in creation order; callers hold the channel's lock."""

    def __init__(self) -> None:
        self.coupons: dict[str, Json] = {}

    def create(self, request: LineRequest, request_id: str) -> LineReply:
        if errors := spec_errors(request.body, "CouponCreateRequest"):
            raise invalid_body(errors)
        coupon_id = _coupon_id()
        fields = ("title", "description", "startTimestamp", "endTimestamp", "maxUseCountPerTicket")
        detail = {name: request.body[name] for name in fields if name in request.body}
        self.coupons[coupon_id] = detail | {
            "couponId": coupon_id,
            "status": "RUNNING",
            "createdTimestamp": int(time.time()),
            "timezone": request.body["timezone"],
            "visibility": request.body["visibility"],
            "acquisitionCondition": {"type": request.body["acquisitionCondition"]["type"]},
            "reward": request.body.get("reward", {"type": "others"}),
        }
        return LineReply(200, {"couponId": coupon_id})

    def add(self, *, title: str, end: int, status: str = "RUNNING") -> str:
        """A coupon made outside the Messaging API (in LINE Official Account Manager): the
        account lists and shows it like one created by `POST /v2/bot/coupon`."""
        coupon_id = _coupon_id()
        self.coupons[coupon_id] = {
            "couponId": coupon_id,
            "title": title,
            "status": status,
            "startTimestamp": 0,
            "endTimestamp": end,
            "maxUseCountPerTicket": 1,
            "createdTimestamp": int(time.time()),
            "timezone": "ASIA_TOKYO",
            "visibility": "UNLISTED",
            "acquisitionCondition": {"type": "normal"},
            "reward": {"type": "others"},
        }
        return coupon_id

    def list(self, request: LineRequest, request_id: str) -> LineReply:
        params = request.query()
        statuses = set(params.get("status", []))
        try:
            limit = int(params.get("limit", [PAGE_DEFAULT])[0])
            start = int(params.get("start", ["0"])[0])
        except ValueError:
            raise invalid_body([("limit", "Must be an integer")]) from None
        if not 1 <= limit <= PAGE_MAX:
            raise invalid_body([("limit", f"Must be between 1 and {PAGE_MAX}")])
        found = [c for c in self.coupons.values() if not statuses or c["status"] in statuses]
        page: Json = {
            "items": [{"couponId": c["couponId"], "title": c["title"]} for c in found[start : start + limit]]
        }
        if start + limit < len(found):
            page["next"] = str(start + limit)
        return LineReply(200, page)

    def detail(self, request: LineRequest, request_id: str, coupon_id: str) -> LineReply:
        return LineReply(200, dict(self._known(coupon_id)))

    def close(self, request: LineRequest, request_id: str, coupon_id: str) -> LineReply:
        coupon = self._known(coupon_id)
        if coupon["status"] == "CLOSED":
            raise LineError(410, "The coupon has already been closed")
        coupon["status"] = "CLOSED"
        return LineReply(200, {})

    def _known(self, coupon_id: str) -> Json:
        coupon = self.coupons.get(coupon_id)
        if coupon is None:
            raise LineError(404, "Not found")
        return coupon

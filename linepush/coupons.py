"""LINE coupons: create one at LINE and keep its row, close one.

https://developers.line.biz/en/docs/messaging-api/send-coupons-to-users/: a coupon is
created with `POST /v2/bot/coupon` (the answer is its `couponId`), sent as a `coupon`
message, and cannot be changed afterwards ("作成したクーポンは修正できません"): a wrong
one is closed (`PUT /v2/bot/coupon/{couponId}/close`) and another created.
"""

from __future__ import annotations

from django.utils import timezone

from deliveries.channels.line import LineTransport, line_transport
from linepush.coupon_models import LineCoupon

# The admin shows and takes the validity in JST; LINE reads the epoch seconds in this zone.
COUPON_TIMEZONE = "ASIA_TOKYO"


def coupon_body(coupon: LineCoupon) -> dict:
    """messaging-api.yml `CouponCreateRequest` for this row."""
    body = {
        "title": coupon.title,
        "acquisitionCondition": {"type": "normal"},
        "startTimestamp": int(coupon.starts_at.timestamp()),
        "endTimestamp": int(coupon.ends_at.timestamp()),
        "maxUseCountPerTicket": coupon.max_use_per_ticket,
        "timezone": COUPON_TIMEZONE,
        "visibility": coupon.visibility,
        "reward": _reward(coupon),
    }
    if coupon.description:
        body["description"] = coupon.description
    return body


def _reward(coupon: LineCoupon) -> dict:
    if not coupon.price:
        return {"type": coupon.reward}
    key = "fixedAmount" if coupon.price == LineCoupon.Price.FIXED else "percentage"
    return {"type": coupon.reward, "priceInfo": {"type": coupon.price, key: coupon.amount}}


def _transport(coupon: LineCoupon) -> LineTransport:
    return line_transport(coupon.tenant.line_channel_token or "-")


def coupon_create(*, coupon: LineCoupon, transport: LineTransport | None = None) -> LineCoupon:
    """Create the coupon at LINE, then store the row with LINE's `couponId`; raises
    TransportError (nothing stored) when LINE refuses or cannot be reached."""
    coupon.coupon_id = (transport or _transport(coupon)).coupon_create(coupon_body(coupon))
    coupon.status = LineCoupon.Status.RUNNING
    coupon.save()
    return coupon


def coupon_close(*, coupon: LineCoupon, transport: LineTransport | None = None) -> bool:
    """Close a running coupon at LINE and mark it closed; False when it was closed already.
    LINE's 410 Gone (closed or expired there) also ends it here."""
    if not coupon.is_running():
        return False
    (transport or _transport(coupon)).coupon_close(coupon.coupon_id)
    LineCoupon.objects.filter(pk=coupon.pk).update(status=LineCoupon.Status.CLOSED, closed_at=timezone.now())
    return True

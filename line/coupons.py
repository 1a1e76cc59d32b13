"""LINE coupons: create one at LINE and keep its row, close one; the account's running
coupons and whether a message names one, read from LINE.

https://developers.line.biz/en/docs/messaging-api/send-coupons-to-users/: a coupon is
created with `POST /v2/bot/coupon` (the answer is its `couponId`), sent as a `coupon`
message, and cannot be changed afterwards ("作成したクーポンは修正できません"): a wrong
one is closed (`PUT /v2/bot/coupon/{couponId}/close`) and another created.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext

from core.models import Tenant
from core.transport import TransportError
from line.coupon_models import LineCoupon
from line.transport import LineTransport, line_transport

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


# -- what the account has (LINE Official Account Manager's coupons included) ----------


@dataclass(frozen=True)
class AccountCoupon:
    coupon_id: str
    title: str


def account_coupons(*, tenant: Tenant, transport: LineTransport | None = None) -> list[AccountCoupon]:
    """The running coupons of the tenant's LINE account, as LINE lists them; raises
    TransportError when LINE cannot be asked."""
    listed = (transport or line_transport(tenant.line_channel_token or "-")).coupons(status="RUNNING")
    return [AccountCoupon(str(c["couponId"]), str(c.get("title") or "")) for c in listed]


def coupon_message_problems(*, tenant_id: int, messages: object) -> list[str]:
    """A `coupon` message must name a coupon of the tenant's LINE account that LINE runs now
    (`GET /v2/bot/coupon/{couponId}`): made here or in LINE Official Account Manager."""
    if not isinstance(messages, list):
        return []
    named = [m.get("couponId") for m in messages if isinstance(m, dict) and m.get("type") == "coupon"]
    if not named:
        return []
    tenant, now = Tenant.objects.get(pk=tenant_id), timezone.now()
    problems = (_coupon_problem(tenant, str(coupon_id), now) for coupon_id in dict.fromkeys(named))
    return [problem for problem in problems if problem]


def _coupon_problem(tenant: Tenant, coupon_id: str, now: datetime) -> str:
    try:
        coupon = line_transport(tenant.line_channel_token or "-").coupon(coupon_id)
    except TransportError as exc:
        # LINE cannot be asked now: a coupon made here and not closed here passes.
        if LineCoupon.objects.filter(
            tenant=tenant, coupon_id=coupon_id, status=LineCoupon.Status.RUNNING
        ).exists():
            return ""
        return gettext("クーポン「%(id)s」を LINE で確認できませんでした（%(error)s）。") % {
            "id": coupon_id,
            "error": exc.message,
        }
    if coupon is None or not _running(coupon, now):
        return gettext("クーポン「%(id)s」はこのテナントの配布中のクーポンではありません。") % {
            "id": coupon_id
        }
    return ""


def _running(coupon: dict, now: datetime) -> bool:
    """RUNNING and not past its `endTimestamp` ("Coupon cannot be used after this time",
    messaging-api.yml CouponResponse)."""
    end = coupon.get("endTimestamp")
    ended = isinstance(end, int) and end <= now.timestamp()
    return coupon.get("status") == "RUNNING" and not ended

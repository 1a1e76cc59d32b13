"""LINE coupons: created at LINE (the fake checks each body against messaging-api.yml's
CouponCreateRequest), stored with LINE's couponId, closed at LINE; a registration reply's
`coupon` message must name a running coupon of the tenant."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from backlog_bridge.body.issue import parse_issue
from core.transport import TransportError
from deliveries.approve.checks import approval_check
from deliveries.models import MessageTemplate
from line.coupons import AccountCoupon, account_coupons, coupon_body, coupon_close, coupon_create
from line.models import LineCoupon, LinePushSettings, LineWebhookEvent
from tests.helpers.backlog import body
from tests.helpers.linepush import deliver, fixture, shop

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]

JST = ZoneInfo("Asia/Tokyo")
COUPON = "/v2/bot/coupon"


@pytest.fixture
def tenant(db):
    return shop()


def created(line) -> list:
    return [r for r in line.requests if (r.method, r.path) == ("POST", COUPON)]


def closes(line) -> list:
    return [r.path for r in line.requests if r.method == "PUT"]


def new_coupon(tenant, **fields) -> LineCoupon:
    fields = {
        "title": "友だち限定 100 円引き",
        "reward": LineCoupon.Reward.DISCOUNT,
        "price": LineCoupon.Price.FIXED,
        "amount": 100,
        "starts_at": datetime(2026, 12, 10, 0, 0, tzinfo=JST),
        "ends_at": datetime(2026, 12, 31, 23, 59, tzinfo=JST),
        **fields,
    }
    coupon = LineCoupon(tenant=tenant, **fields)
    coupon.full_clean(exclude=["coupon_id"])
    return coupon


def test_it_creates_the_coupon_at_line_and_stores_its_id(tenant, line):
    coupon = coupon_create(coupon=new_coupon(tenant, description="スタッフに提示してください"))

    [request] = created(line)
    assert request.body == {
        "title": "友だち限定 100 円引き",
        "description": "スタッフに提示してください",
        "acquisitionCondition": {"type": "normal"},
        "startTimestamp": 1796828400,  # 2026-12-10 00:00 JST
        "endTimestamp": 1798729140,  # 2026-12-31 23:59 JST
        "maxUseCountPerTicket": 1,
        "timezone": "ASIA_TOKYO",
        "visibility": "UNLISTED",
        "reward": {"type": "discount", "priceInfo": {"type": "fixed", "fixedAmount": 100}},
    }
    stored = LineCoupon.objects.get()
    assert stored.coupon_id == request.response["couponId"] == coupon.coupon_id
    assert stored.status == "RUNNING"


@pytest.mark.parametrize(
    ("fields", "reward"),
    [
        (
            {"reward": "cashBack", "price": "percentage", "amount": 10},
            {"type": "cashBack", "priceInfo": {"type": "percentage", "percentage": 10}},
        ),
        ({"reward": "free", "price": "fixed", "amount": 500}, {"type": "free"}),
        ({"reward": "gift", "price": "", "amount": None}, {"type": "gift"}),
    ],
    ids=["cash-back-percentage", "free-drops-the-price", "gift"],
)
def test_it_sends_each_kind_of_reward_as_the_spec_has_it(tenant, line, fields, reward):
    coupon_create(coupon=new_coupon(tenant, **fields))

    assert created(line)[0].body["reward"] == reward
    assert created(line)[0].status == 200  # the fake checked it against CouponCreateRequest


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"ends_at": datetime(2026, 12, 1, tzinfo=JST)}, "ends_at"),
        ({"price": ""}, "price"),
        ({"price": "percentage", "amount": 100}, "amount"),
        ({"title": "x" * 61}, "title"),
    ],
    ids=["ends-before-it-starts", "discount-without-price", "percentage-over-99", "title-over-60"],
)
def test_it_refuses_a_coupon_line_would_refuse_before_asking_line(tenant, line, fields, field):
    with pytest.raises(ValidationError) as refused:
        new_coupon(tenant, **fields)

    assert field in refused.value.message_dict
    assert created(line) == []


def test_it_stores_nothing_when_line_refuses(tenant, line):
    line.fail_next(400, path_prefix=COUPON, body={"message": "The request body has 1 error(s)"})

    with pytest.raises(TransportError):
        coupon_create(coupon=new_coupon(tenant))

    assert not LineCoupon.objects.exists()


def test_it_closes_a_coupon_at_line_once(tenant, line):
    coupon = coupon_create(coupon=new_coupon(tenant))

    assert coupon_close(coupon=coupon) is True
    coupon.refresh_from_db()
    assert coupon.status == "CLOSED" and coupon.closed_at is not None
    assert closes(line) == [f"{COUPON}/{coupon.coupon_id}/close"]
    assert coupon_close(coupon=coupon) is False  # closed already: LINE is not asked again
    assert len(closes(line)) == 1


def test_a_coupon_line_closed_already_ends_here_too(tenant, line):
    coupon = coupon_create(coupon=new_coupon(tenant))
    line.fail_next(410, path_prefix=f"{COUPON}/", body={"message": "Gone"})

    assert coupon_close(coupon=coupon) is True
    coupon.refresh_from_db()
    assert coupon.status == "CLOSED"


def test_the_registration_reply_may_send_a_running_coupon_of_the_tenant(client, tenant, line):
    coupon = coupon_create(coupon=new_coupon(tenant))
    reply = [
        {"type": "text", "text": "友だち追加ありがとうございます"},
        {"type": "coupon", "couponId": coupon.coupon_id},
    ]
    settings_row = LinePushSettings(tenant=tenant, registration_messages=reply)
    settings_row.full_clean()
    settings_row.save()

    deliver(client, fixture("follow"))

    [sent] = line.sent("/v2/bot/message/reply")
    assert sent.status == 200 and sent.body["messages"][1] == {"type": "coupon", "couponId": coupon.coupon_id}
    assert LineWebhookEvent.objects.get().outcome == "done"


def reply_problems(tenant, coupon_id: str) -> list[str]:
    row = LinePushSettings(tenant=tenant, registration_messages=[{"type": "coupon", "couponId": coupon_id}])
    try:
        row.full_clean()
    except ValidationError as refused:
        return refused.message_dict["registration_messages"]
    return []


def test_the_registration_reply_may_send_a_coupon_made_in_the_account_manager(client, tenant, line):
    coupon_id = line.add_coupon("店頭で使える 10% オフ")  # LINE has it; automedia never made it
    settings_row = LinePushSettings(
        tenant=tenant, registration_messages=[{"type": "coupon", "couponId": coupon_id}]
    )
    settings_row.full_clean()
    settings_row.save()

    deliver(client, fixture("follow"))

    [sent] = line.sent("/v2/bot/message/reply")
    assert sent.body["messages"] == [{"type": "coupon", "couponId": coupon_id}]
    assert f"{COUPON}/{coupon_id}" in [r.path for r in line.requests if r.method == "GET"]  # LINE was asked
    assert not LineCoupon.objects.exists()


def test_the_registration_reply_may_not_name_a_coupon_line_does_not_run(tenant, line):
    closed_here = coupon_create(coupon=new_coupon(tenant))
    coupon_close(coupon=closed_here)
    closed_there = coupon_create(coupon=new_coupon(tenant))
    line.close_coupon(closed_there.coupon_id)  # closed in the account manager: the row still says running
    expired = line.add_coupon("先月のクーポン", end=int(timezone.now().timestamp()) - 60)

    for coupon_id in (closed_here.coupon_id, closed_there.coupon_id, expired, "01NOTACOUPON", "../quota"):
        assert reply_problems(tenant, coupon_id) == [
            f"クーポン「{coupon_id}」はこのテナントの配布中のクーポンではありません。"
        ]
    assert "/v2/bot/quota" not in {r.path for r in line.requests}  # no id out of format is sent


def test_when_line_cannot_be_asked_only_a_coupon_running_here_passes(tenant, line):
    made_here = coupon_create(coupon=new_coupon(tenant))
    made_there = line.add_coupon("店頭クーポン")
    line.fail_next(500, count=2, path_prefix=f"{COUPON}/")

    assert reply_problems(tenant, made_here.coupon_id) == []
    [problem] = reply_problems(tenant, made_there)
    assert problem.startswith(f"クーポン「{made_there}」を LINE で確認できませんでした")


def test_a_manager_picks_from_the_accounts_running_coupons(tenant, line):
    made_here = coupon_create(coupon=new_coupon(tenant))
    made_there = line.add_coupon("店頭クーポン")
    line.close_coupon(line.add_coupon("終了済み"))
    for i in range(100):  # a second page (listCoupon's limit is 100)
        line.add_coupon(f"まとめて{i}")

    coupons = account_coupons(tenant=tenant)

    assert coupons[:2] == [
        AccountCoupon(made_here.coupon_id, made_here.title),
        AccountCoupon(made_there, "店頭クーポン"),
    ]
    assert len(coupons) == 102
    lists = [r for r in line.requests if (r.method, r.path) == ("GET", COUPON)]
    assert [r.query for r in lists] == [
        {"status": ["RUNNING"], "limit": ["100"]},
        {"status": ["RUNNING"], "limit": ["100"], "start": ["100"]},
    ]


def test_the_body_is_what_the_fake_checks_against_the_spec(tenant, line):
    body = coupon_body(new_coupon(tenant, visibility="PUBLIC", max_use_per_ticket=-1))

    assert (body["visibility"], body["maxUseCountPerTicket"]) == ("PUBLIC", -1)


def test_approval_refuses_a_template_whose_coupon_is_not_running(tenant, line, settings):
    settings.LINE_API_BASE_URL = line.base_url
    running = coupon_create(coupon=new_coupon(tenant))
    closed = coupon_create(coupon=new_coupon(tenant))
    coupon_close(coupon=closed)
    verdicts = {}
    for rev, coupon in (("running", running), ("closed", closed)):
        MessageTemplate.objects.create(
            name="coupon_send", rev=rev, messages=[{"type": "coupon", "couponId": coupon.coupon_id}]
        )
        parsed = parse_issue(description=body(template=f"coupon_send@{rev}"))
        now = timezone.now()
        verdicts[rev] = approval_check(tenant=tenant, parsed=parsed, due_at=now, now=now).problems

    assert verdicts["running"] == []
    assert verdicts["closed"] == [
        f"クーポン「{closed.coupon_id}」はこのテナントの配布中のクーポンではありません。"
    ]

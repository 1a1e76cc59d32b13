"""The fake LINE's coupon endpoints, over loopback HTTP: create bodies judged by
messaging-api.yml's CouponCreateRequest, and every answer in the spec's response shape."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from sandbox.line import FakeLine
from sandbox.line.spec import spec_errors

TOKEN = "channel-token"
COUPON = {
    "title": "友だち限定クーポン",
    "acquisitionCondition": {"type": "normal"},
    "startTimestamp": 1796828400,
    "endTimestamp": 1798729140,
    "maxUseCountPerTicket": 1,
    "timezone": "ASIA_TOKYO",
    "visibility": "UNLISTED",
    "reward": {"type": "discount", "priceInfo": {"type": "fixed", "fixedAmount": 100}},
}


@pytest.fixture
def api() -> Iterator[httpx.Client]:
    with FakeLine(channel_tokens={TOKEN}) as fake:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=fake.base_url, headers=headers, timeout=2, verify=False) as client:
            yield client


def create(api: httpx.Client, **changes) -> httpx.Response:
    return api.post("/v2/bot/coupon", json=COUPON | changes)


def test_it_creates_lists_shows_and_closes_a_coupon_in_the_specs_shapes(api: httpx.Client) -> None:
    created = create(api)
    coupon_id = created.json()["couponId"]
    listed = api.get("/v2/bot/coupon")
    shown = api.get(f"/v2/bot/coupon/{coupon_id}")
    closed = api.put(f"/v2/bot/coupon/{coupon_id}/close")

    assert spec_errors(created.json(), "CouponCreateResponse") == []
    assert spec_errors(listed.json(), "MessagingApiPagerCouponListResponse") == []
    assert spec_errors(shown.json(), "CouponResponse") == []
    assert listed.json() == {"items": [{"couponId": coupon_id, "title": "友だち限定クーポン"}]}
    assert (shown.json()["status"], shown.json()["reward"]) == ("RUNNING", COUPON["reward"])
    assert closed.status_code == 200
    assert api.get(f"/v2/bot/coupon/{coupon_id}").json()["status"] == "CLOSED"
    assert api.put(f"/v2/bot/coupon/{coupon_id}/close").status_code == 410


@pytest.mark.parametrize(
    ("changes", "detail"),
    [
        ({"title": ""}, ("title", "Length must be between 1 and 60")),
        (
            {"visibility": "PRIVATE"},
            ("visibility", "Must be one of the following values: [UNLISTED, PUBLIC]"),
        ),
        ({"maxUseCountPerTicket": 2}, ("maxUseCountPerTicket", "Must be less than or equal to 1")),
        (
            {"reward": {"type": "points"}},
            ("reward.type", "Must be one of the following values: [cashBack, discount, free, gift, others]"),
        ),
    ],
    ids=["empty-title", "private", "use-twice", "unknown-reward"],
)
def test_it_refuses_a_create_body_the_spec_refuses(api: httpx.Client, changes: dict, detail: tuple) -> None:
    response = create(api, **changes)

    assert response.status_code == 400
    assert detail in {(d["property"], d["message"]) for d in response.json()["details"]}
    assert api.get("/v2/bot/coupon").json() == {"items": []}


def test_it_pages_and_filters_the_list(api: httpx.Client) -> None:
    ids = [create(api, title=f"クーポン{n}").json()["couponId"] for n in range(3)]
    api.put(f"/v2/bot/coupon/{ids[0]}/close")

    first = api.get("/v2/bot/coupon", params={"limit": 2}).json()
    rest = api.get("/v2/bot/coupon", params={"limit": 2, "start": first["next"]}).json()
    running = api.get("/v2/bot/coupon", params={"status": "RUNNING"}).json()

    assert [c["couponId"] for c in first["items"] + rest["items"]] == ids and "next" not in rest
    assert [c["couponId"] for c in running["items"]] == ids[1:]


def test_an_unknown_coupon_is_404(api: httpx.Client) -> None:
    assert api.get("/v2/bot/coupon/01UNKNOWN").status_code == 404
    assert api.put("/v2/bot/coupon/01UNKNOWN/close").status_code == 404


def test_a_coupon_made_in_the_account_manager_is_listed_and_shown_as_the_spec_has_it() -> None:
    with FakeLine(channel_tokens={TOKEN}) as fake:
        coupon_id = fake.add_coupon("店頭限定クーポン", end=1798729140)
        closed = fake.add_coupon("終了したクーポン")
        fake.close_coupon(closed)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=fake.base_url, headers=headers, timeout=2) as api:
            running = api.get("/v2/bot/coupon", params={"status": "RUNNING"}).json()
            shown = api.get(f"/v2/bot/coupon/{coupon_id}").json()
            gone = api.get(f"/v2/bot/coupon/{closed}").json()

    assert running == {"items": [{"couponId": coupon_id, "title": "店頭限定クーポン"}]}
    assert spec_errors(shown, "CouponResponse") == []
    assert (shown["status"], shown["endTimestamp"], gone["status"]) == ("RUNNING", 1798729140, "CLOSED")

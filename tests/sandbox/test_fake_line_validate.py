"""The fake LINE's validate, quota and member-count endpoints (what the approval-time checks
call), over loopback HTTP; messages are judged by messaging-api.yml's Message schemas."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from sandbox.line import FakeLine
from sandbox.line.spec import spec_errors
from tests.contracts.openapi import load_spec

TOKEN = "channel-token"
GROUP = "C" + "a" * 32
TEXT = {"type": "text", "text": "本日のお知らせです"}
IMAGE = {
    "type": "image",
    "originalContentUrl": "https://example.jp/a.jpg",
    "previewImageUrl": "https://example.jp/p.jpg",
}
KINDS = ("push", "multicast", "broadcast", "narrowcast", "reply")


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine(channel_tokens={TOKEN}) as fake:
        yield fake


@pytest.fixture
def api(fake: FakeLine) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=fake.base_url, headers=headers, timeout=2, verify=False) as client:
        yield client


def details(response: httpx.Response) -> set[tuple[str, str]]:
    return {(d["property"], d["message"]) for d in response.json().get("details", [])}


@pytest.mark.parametrize("kind", KINDS)
def test_it_accepts_valid_messages_on_every_send_kind(api: httpx.Client, kind: str) -> None:
    response = api.post(f"/v2/bot/message/validate/{kind}", json={"messages": [TEXT, IMAGE]})

    assert (response.status_code, response.json()) == (200, {})


def test_it_names_each_missing_field_of_each_message(api: httpx.Client) -> None:
    image = {"type": "image", "originalContentUrl": "https://example.jp/a.jpg"}

    response = api.post("/v2/bot/message/validate/multicast", json={"messages": [TEXT, image]})

    assert response.status_code == 400
    assert response.json()["message"] == "The request body has 1 error(s)"
    assert details(response) == {("messages[1].previewImageUrl", "May not be empty")}


def test_it_checks_what_only_the_spec_says(api: httpx.Client) -> None:
    """`emojis` must be an array and a sticker's ids strings (messaging-api.yml), which the
    fake's own send checks do not look at."""
    messages = [{**TEXT, "emojis": "⭐"}, {"type": "sticker", "packageId": 446, "stickerId": "1988"}]

    response = api.post("/v2/bot/message/validate/push", json={"messages": messages})

    assert details(response) == {
        ("messages[0].emojis", "Must be an array"),
        ("messages[1].packageId", "Must be a string"),
    }


def test_it_refuses_an_unknown_type_and_too_many_messages(api: httpx.Client) -> None:
    unknown = api.post("/v2/bot/message/validate/push", json={"messages": [{"type": "fax"}]})
    six = api.post("/v2/bot/message/validate/push", json={"messages": [TEXT] * 6})

    [(prop, message)] = details(unknown)
    assert prop == "messages[0].type" and message.startswith("Must be one of the following values: [")
    assert details(six) == {("messages", "Size must be between 1 and 5")}


def test_it_still_applies_the_documented_limits_the_spec_leaves_out(api: httpx.Client) -> None:
    long_text = {"type": "text", "text": "あ" * 5001}
    http_image = {**IMAGE, "previewImageUrl": "http://example.jp/p.jpg"}

    response = api.post("/v2/bot/message/validate/push", json={"messages": [long_text, http_image]})

    assert details(response) == {
        ("messages[0].text", "Length must be between 0 and 5000"),
        ("messages[1].previewImageUrl", "Must be a valid HTTPS URL"),
    }


def test_a_validate_call_sends_nothing_and_costs_no_quota(fake: FakeLine, api: httpx.Client) -> None:
    fake.set_quota(type="limited", value=10, total_usage=3)

    api.post("/v2/bot/message/validate/multicast", json={"messages": [TEXT]})

    assert fake.sent() == []
    assert api.get("/v2/bot/message/quota/consumption").json() == {"totalUsage": 3}


def test_it_answers_quota_consumption_and_member_count(fake: FakeLine, api: httpx.Client) -> None:
    fake.set_quota(type="limited", value=200, total_usage=182)
    fake.add_group(GROUP, member_count=41)

    assert api.get("/v2/bot/message/quota").json() == {"type": "limited", "value": 200}
    assert api.get("/v2/bot/message/quota/consumption").json() == {"totalUsage": 182}
    assert api.get(f"/v2/bot/group/{GROUP}/members/count").json() == {"count": 41}
    assert api.get(f"/v2/bot/group/C{'b' * 32}/members/count").status_code == 404


@pytest.mark.contract
def test_its_validate_and_quota_answers_match_the_spec(fake: FakeLine, api: httpx.Client) -> None:
    spec = load_spec("messaging-api.yml")
    schemas = spec["components"]["schemas"]
    fields = {name: set(schema.get("properties", {})) for name, schema in schemas.items()}
    fake.set_quota(type="limited", value=200, total_usage=7)

    for kind in KINDS:
        assert set(spec["paths"][f"/v2/bot/message/validate/{kind}"]["post"]["responses"]) == {"200"}
        bad = api.post(f"/v2/bot/message/validate/{kind}", json={"messages": [{"type": "text"}]}).json()
        assert set(schemas["ErrorResponse"]["required"]) <= set(bad) <= fields["ErrorResponse"]
        assert all(set(d) == fields["ErrorDetail"] for d in bad["details"])
    quota = api.get("/v2/bot/message/quota").json()
    assert set(quota) == fields["MessageQuotaResponse"]
    assert quota["type"] in schemas["QuotaType"]["enum"]
    assert spec_errors(quota, "MessageQuotaResponse") == []
    assert spec_errors(api.get("/v2/bot/message/quota/consumption").json(), "QuotaConsumptionResponse") == []
    # The request the approval checks send is itself what the spec asks for.
    assert spec_errors({"messages": [TEXT, IMAGE]}) == []

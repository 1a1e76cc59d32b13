"""Contract: every LINE request body automedia builds validates against LINE's published OpenAPI spec.

The spec is tests/contracts/line-openapi/messaging-api.yml (line/line-openapi, OpenAPI 3.0;
its SOURCE.txt names the commit); tests/contracts/openapi.py turns it into a validator.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import respx
from django.conf import settings
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from backlog_bridge.body.task import Attachment
from deliveries.channels.line.correction import correction_message
from deliveries.channels.line.templates import render_messages
from deliveries.channels.placeholders import template_variables
from line.messages import validate_line_messages
from line.transport import LineTransport, aggregation_unit, multicast_body, push_body
from tests.contracts import openapi
from tests.contracts.openapi import SCHEMAS, OpenApi30Validator, load_spec, with_discriminator_bases

SPEC_URI = "urn:line-openapi:messaging-api"
THEME = settings.BASE_DIR / "templates" / "line"
THEME_FILES = sorted(THEME.glob("*.json"))
GROUP_ID = "C" + "0" * 32
USER_IDS = [f"U{n:032x}" for n in range(500)]
IMAGE = Attachment("画像", "https://cdn.example.jp/banner.png")
SAMPLE_VALUES = {"date": "2026-05-15", "hours": "7:00-18:00", "title": "ファンミーティング"}


pytestmark = [pytest.mark.contract, pytest.mark.usefixtures("httpx_engine")]  # respx sees only httpx


@pytest.fixture(scope="module")
def registry() -> Registry:
    resource = Resource.from_contents(
        with_discriminator_bases(load_spec("messaging-api.yml")), default_specification=DRAFT4
    )
    return Registry().with_resource(SPEC_URI, resource)


def errors(registry: Registry, schema_name: str, body: dict) -> list[str]:
    validator = OpenApi30Validator({"$ref": f"{SPEC_URI}{SCHEMAS}{schema_name}"}, registry=registry)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


# --- the bodies automedia sends -------------------------------------------------------------


def render_theme(path: Path, attachments: list[Attachment]) -> list[dict]:
    messages = json.loads(path.read_text(encoding="utf-8"))
    variables = {name: SAMPLE_VALUES.get(name, f"{name} の例") for name in template_variables(messages)}
    return render_messages(messages=messages, variables=variables, attachments=attachments)


def build(kind: str, messages: list[dict], unit: str | None) -> tuple[str, dict]:
    if kind == "push":
        return "PushMessageRequest", push_body(to=GROUP_ID, messages=messages, unit=unit)
    return "MulticastRequest", multicast_body(to=USER_IDS, messages=messages, unit=unit)


def test_it_has_the_demo_templates_to_check():
    assert {"announce_open.json", "reminder.json", "reminder_mention.json"} <= {p.name for p in THEME_FILES}


@pytest.mark.parametrize("kind", ["push", "multicast"])
@pytest.mark.parametrize("unit", [None, aggregation_unit("ACME-12")], ids=["no-unit", "unit"])
@pytest.mark.parametrize("attachments", [[], [IMAGE]], ids=["text-only", "with-image"])
@pytest.mark.parametrize("path", THEME_FILES, ids=[p.stem for p in THEME_FILES])
def test_it_sends_demo_templates_in_bodies_the_spec_accepts(registry, path, attachments, unit, kind):
    schema_name, body = build(kind, render_theme(path, attachments), unit)

    assert errors(registry, schema_name, body) == []


def test_it_multicasts_to_500_recipients_within_the_spec(registry):
    _, body = build(
        "multicast", render_theme(THEME / "announce_open.json", [IMAGE]), aggregation_unit("ACME-12")
    )

    assert len(body["to"]) == 500
    assert errors(registry, "MulticastRequest", body) == []


@pytest.mark.parametrize(
    "message",
    [
        {"type": "text", "text": "x"},
        {
            "type": "image",
            "originalContentUrl": "https://x.jp/a.png",
            "previewImageUrl": "https://x.jp/a.png",
        },
        {
            "type": "video",
            "originalContentUrl": "https://x.jp/a.mp4",
            "previewImageUrl": "https://x.jp/a.jpg",
        },
        {"type": "audio", "originalContentUrl": "https://x.jp/a.m4a", "duration": 60000},
        {"type": "sticker", "packageId": "446", "stickerId": "1988"},
        {"type": "location", "title": "店", "address": "東京都", "latitude": 35.6, "longitude": 139.7},
        {
            "type": "flex",
            "altText": "お知らせ",
            "contents": {
                "type": "bubble",
                "body": {"type": "box", "layout": "vertical", "contents": [{"type": "text", "text": "x"}]},
            },
        },
    ],
    ids=lambda m: m["type"],
)
def test_it_agrees_with_the_spec_on_messages_the_renderer_accepts(registry, message):
    assert validate_line_messages([message]) == []
    assert errors(registry, "PushMessageRequest", push_body(to=GROUP_ID, messages=[message])) == []


def test_it_puts_spec_valid_bodies_on_the_wire(registry):
    messages = render_theme(THEME / "reminder.json", [IMAGE])
    line = LineTransport(token="token", base_url="https://api.line.test")

    with respx.mock(base_url="https://api.line.test") as mock:
        routes = {
            "PushMessageRequest": mock.post("/v2/bot/message/push").respond(200, json={"sentMessages": []}),
            "MulticastRequest": mock.post("/v2/bot/message/multicast").respond(200, json={}),
            "ReplyMessageRequest": mock.post("/v2/bot/message/reply").respond(200, json={"sentMessages": []}),
        }
        line.push(
            to=GROUP_ID, messages=messages, retry_key="123e4567-e89b-12d3-a456-426614174000", unit="ACME_12"
        )
        line.multicast(to=USER_IDS[:3], messages=messages, retry_key="123e4567-e89b-12d3-a456-426614174001")
        line.reply(reply_token="reply-token", messages=messages)

    for schema_name, route in routes.items():
        assert route.call_count == 1
        assert errors(registry, schema_name, json.loads(route.calls.last.request.content)) == []


# --- the check can fail -----------------------------------------------------------------


@pytest.mark.parametrize(
    "schema_name, body, problem",
    [
        (
            "PushMessageRequest",
            {"to": GROUP_ID, "messages": [{"type": "text"}]},
            "'text' is a required property",
        ),
        (
            "PushMessageRequest",
            {"to": GROUP_ID, "messages": [{"type": "image", "originalContentUrl": "https://x.jp/a.png"}]},
            "'previewImageUrl' is a required property",
        ),
        (
            "PushMessageRequest",
            {"to": GROUP_ID, "messages": [{"type": "banner"}]},
            "'banner' is not one of the mapped",
        ),
        (
            "PushMessageRequest",
            {"to": GROUP_ID, "messages": [{"type": "text", "text": "x"}] * 6},
            "is too long",
        ),
        ("PushMessageRequest", {"messages": [{"type": "text", "text": "x"}]}, "'to' is a required property"),
        (
            "PushMessageRequest",
            {
                "to": GROUP_ID,
                "messages": [
                    {"type": "flex", "altText": "x", "contents": {"type": "bubble", "body": {"type": "box"}}}
                ],
            },
            "'layout' is a required property",
        ),
        (
            "MulticastRequest",
            {"to": USER_IDS + ["U1"], "messages": [{"type": "text", "text": "x"}]},
            "is too long",
        ),
        (
            "MulticastRequest",
            {
                "to": USER_IDS[:1],
                "messages": [{"type": "text", "text": "x"}],
                "customAggregationUnits": ["ACME-12"],
            },
            "does not match",
        ),
    ],
    ids=[
        "text-without-text",
        "image-without-preview",
        "unknown-type",
        "six-messages",
        "no-to",
        "flex-box-without-layout",
        "501-recipients",
        "bad-unit",
    ],
)
def test_it_rejects_bodies_that_break_the_spec(registry, schema_name, body, problem):
    found = errors(registry, schema_name, body)

    assert any(problem in error for error in found), found


def test_it_fails_rather_than_skips_when_the_spec_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(openapi, "LINE_OPENAPI_DIR", tmp_path)

    with pytest.raises(pytest.fail.Exception, match="messaging-api.yml"):
        load_spec("messaging-api.yml")


def test_it_reads_every_spec_from_the_repository():
    assert openapi.LINE_OPENAPI_DIR.is_relative_to(settings.BASE_DIR)
    for name in ("messaging-api.yml", "webhook.yml", "insight.yml"):
        assert load_spec(name)["openapi"].startswith("3.")


@pytest.mark.parametrize("kind", ["push", "multicast"])
def test_a_correction_is_sent_in_bodies_the_spec_accepts(registry, kind):
    quote = "q3Plxr4AgKd" if kind == "push" else ""  # a multicast has no quoteToken to quote
    schema_name, body = build(kind, [correction_message("【訂正】8:00 からです", quote)], None)

    assert errors(registry, schema_name, body) == []
    assert body["messages"][0].get("quoteToken", "") == quote

"""Requests drawn from the published API schema (`/api/schema/`): every message object it
allows is one the view accepts, and a whole request it allows is queued, never refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from line.message_schema import MESSAGE_SCHEMA
from line.messages import MESSAGE_TYPES, validate_line_messages
from linepush.models import LineApiToken, LinePushItem
from tests.helpers.json_schema import from_schema
from tests.helpers.linepush import shop

URL = "/api/linepush/items/"


def test_the_schema_has_a_branch_for_every_message_type():
    kinds = [kind for branch in MESSAGE_SCHEMA["oneOf"] for kind in branch["properties"]["type"]["enum"]]

    assert sorted(kinds) == sorted(MESSAGE_TYPES)


@settings(max_examples=300, deadline=None)
@given(message=from_schema(MESSAGE_SCHEMA))
def test_every_message_the_schema_allows_passes_the_views_check(message):
    assert validate_line_messages([message]) == []


@pytest.mark.parametrize(
    "message",
    [
        {"type": "text", "text": "   "},
        {"type": "image", "originalContentUrl": "http://x.jp/a.png", "previewImageUrl": "https://x.jp/a.png"},
        {
            "type": "image",
            "originalContentUrl": "https://[x.jp/a.png",
            "previewImageUrl": "https://x.jp/a.png",
        },
        {"type": "sticker", "packageId": "1"},
        {"type": "template", "altText": "a", "template": {"type": "buttons", "text": ""}},
        {"type": "flex", "altText": "a", "contents": {"type": "box"}},
        {"type": "textV2", "text": "{user} さん"},
    ],
)
def test_the_schema_refuses_what_the_view_refuses(message):
    assert validate_line_messages([message]) != []
    assert not Draft7Validator(MESSAGE_SCHEMA).is_valid(message)


@pytest.fixture
def published(client) -> dict:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    return response.json()["components"]["schemas"]["PushItemIn"]["properties"]


@pytest.fixture
def token(db, settings) -> str:
    settings.LINEPUSH_API_THROTTLE_RATE = "10000/min"  # the examples, not the token's rate, are tested
    return LineApiToken.issue(tenant=shop(), name="fuzz")[1]


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_request_drawn_from_the_published_schema_is_queued(client, published, token, data):
    LinePushItem.objects.all().delete()
    request = {
        "ext_group_id": data.draw(from_schema(published["ext_group_id"])),
        "payload": data.draw(from_schema(published["payload"])),
        "dedupe_key": "fuzz",
    }

    response = client.post(
        URL, request, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )

    assert response.status_code == 201, response.json()

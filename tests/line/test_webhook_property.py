"""Property: whatever signed body is posted to the LINE receiver — LINE's recorded event
shapes with any field replaced, removed or nested, odd ids and text, bytes that are not
JSON — the answer is a 2xx or a 4xx, and every event it stored ends, after one drain,
`done`, `ignored` or `rejected`, with no retry left over and no bug hidden behind one
(LINE's API answers as LINE would, through respx)."""

from __future__ import annotations

import json

import pytest
import respx
from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

from line.events import line_events_drain
from line.models import LineSurveyRule, LineWebhookEvent
from tests.helpers.backlog import FIXTURES
from tests.helpers.fuzz import json_leaves, json_values, webhook_fuzz
from tests.helpers.linepush import deliver, shop

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]  # respx sees only httpx

SHAPES = [
    json.loads(p.read_text(encoding="utf-8"))["events"][0] for p in sorted((FIXTURES / "line").glob("*.json"))
]
PATHS = [
    ("type",),
    ("webhookEventId",),
    ("timestamp",),
    ("replyToken",),
    ("source",),
    ("source", "type"),
    ("source", "userId"),
    ("source", "groupId"),
    ("source", "roomId"),
    ("message",),
    ("message", "type"),
    ("message", "text"),
    ("joined",),
    ("joined", "members"),
    ("left",),
    ("left", "members"),
]
ODD_TEXT = [
    "",
    "\ud800",
    "a\x00b",
    "../../bot/info",
    "U" + "0" * 32,
    "C" + "f" * 32,
    "R" + "1" * 32,
    "U" + "0" * 70,
    "x" * 70,
    "group",
    "room",
    "user",
    "text",
    "参加します",
]
leaves = json_leaves(ODD_TEXT)
json_any = json_values(leaves)
wrong_kind = (
    st.text(min_size=1, max_size=8)
    | st.sampled_from(ODD_TEXT)
    | st.integers()
    | st.booleans()
    | st.lists(leaves, min_size=1, max_size=3)
    | st.dictionaries(st.sampled_from(["type", "userId", "groupId", "text", "members"]), leaves, min_size=1)
)
DELETE = object()


def _changed(shape: dict, path: tuple, value: object) -> dict:
    """The shape with the value at `path` replaced (or removed); unchanged where it has no such place."""
    event = json.loads(json.dumps(shape))
    target = event
    for step in path[:-1]:
        if not isinstance(target, dict) or step not in target:
            return event
        target = target[step]
    if isinstance(target, dict):
        target.pop(path[-1], None) if value is DELETE else target.__setitem__(path[-1], value)
    return event


@st.composite
def line_events(draw) -> object:
    event = draw(st.sampled_from(SHAPES)) | {"webhookEventId": f"01J{draw(st.integers(0, 10**9)):023d}"}
    for _ in range(draw(st.sampled_from([0, 1, 1, 2, 2, 3]))):
        value = draw(wrong_kind | json_any | st.just(DELETE))
        event = _changed(event, draw(st.sampled_from(PATHS)), value)
    return draw(st.sampled_from([event, event, event, draw(json_any)]))


@st.composite
def callback_bodies(draw) -> bytes:
    body = {"destination": "U" + "b" * 32, "events": draw(st.lists(line_events(), max_size=3))}
    body = draw(st.sampled_from([body, body, body, {"events": draw(json_any)}, draw(json_any)]))
    return json.dumps(body).encode()  # ASCII escapes: lone surrogates travel as \ud800


nested = st.sampled_from([40, 5000]).map(lambda depth: b'{"events": ' + b"[" * depth + b"]" * depth + b"}")
bodies = callback_bodies() | st.binary(max_size=64) | nested


@pytest.fixture
def tenant(db):
    tenant = shop()
    LineSurveyRule.objects.create(tenant=tenant, name="参加", pattern="参加します", add_tags=["shoot_yes"])
    return tenant


@webhook_fuzz
@given(raw=st.lists(bodies, min_size=1, max_size=3))
def test_any_signed_body_gets_a_2xx_or_4xx_and_every_stored_event_ends(client, tenant, no_enqueue, raw):
    with transaction.atomic(), respx.mock(assert_all_called=False) as line:
        # profile, group summary, member count and reply, as LINE answers them
        line.route().respond(200, json={"displayName": "山田", "groupName": "撮影チーム", "count": 3})
        codes = [deliver(client, one).status_code for one in raw]
        line_events_drain()

        assert all(200 <= code < 500 for code in codes), codes
        ends = {(e.type, e.outcome, e.detail) for e in LineWebhookEvent.objects.all()}
        assert {outcome for _, outcome, _ in ends} <= {"done", "ignored", "rejected"}, ends
        assert not any(detail.startswith("gave up") for _, _, detail in ends), ends
        transaction.set_rollback(True)

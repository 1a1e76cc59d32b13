"""Property: whatever body is posted to the Backlog receiver — the recorded activity shapes
with any field replaced, removed or nested, odd text, bytes that are not JSON — the answer is
a 2xx or a 4xx, and every event it stored ends, after one drain, `done`, `ignored` or
`rejected` (a payload a handler cannot read), with no retry left over and no bug hidden
behind one (Backlog's API answers as Backlog would, through respx)."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

from backlog_bridge.events import events_drain
from backlog_bridge.models import BacklogEvent
from tests.helpers.backlog import FIXTURES, body, post, webhook_url
from tests.helpers.fuzz import json_leaves, json_values, webhook_fuzz

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]  # respx sees only httpx

SHAPES = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((FIXTURES / "backlog").glob("*.json"))]
PATHS = [
    ("id",),
    ("type",),
    ("project",),
    ("project", "projectKey"),
    ("createdUser",),
    ("createdUser", "id"),
    ("content",),
    ("content", "id"),
    ("content", "key_id"),
    ("content", "changes"),
    ("content", "changes", 0),
    ("content", "changes", 0, "field"),
    ("content", "changes", 0, "new_value"),
    ("content", "comment"),
    ("content", "comment", "id"),
    ("content", "link"),
    ("content", "link", 0),
    ("content", "link", 0, "key_id"),
]
ODD_TEXT = [
    "",
    "\ud800",
    "\udfff",
    "a\x00b",
    "1/../77",
    "ACME-1",
    "ACME-1/../OTHER-1",
    "x" * 70,
    "５",
    "status",
]
leaves = json_leaves(ODD_TEXT, st.sampled_from([1, 2, 3, 4, 14, 5, 2**63, 0, -1]))
json_any = json_values(leaves)
# A value of the wrong kind (where a handler wants an object, a list, a number) is the usual
# fault: drawn more often than deep random JSON.
wrong_kind = (
    st.text(min_size=1, max_size=8)
    | st.sampled_from(ODD_TEXT)
    | st.integers()
    | st.booleans()
    | st.lists(leaves, min_size=1, max_size=3)
    | st.dictionaries(st.text(max_size=6), leaves, min_size=1, max_size=3)
)
DELETE = object()


def _changed(shape: dict, path: tuple, value: object) -> dict:
    """The shape with the value at `path` replaced (or removed); unchanged where it has no such place."""
    payload = json.loads(json.dumps(shape))
    target = payload
    for step in path[:-1]:
        if not _has(target, step):
            return payload
        target = target[step]
    last = path[-1]
    if isinstance(target, dict) and isinstance(last, str):
        target.pop(last, None) if value is DELETE else target.__setitem__(last, value)
    elif _has(target, last):
        target.pop(last) if value is DELETE else target.__setitem__(last, value)
    return payload


def _has(container: object, step: str | int) -> bool:
    if isinstance(step, str):
        return isinstance(container, dict) and step in container
    return isinstance(container, list) and step < len(container)


@st.composite
def activities(draw) -> bytes:
    shape = draw(st.sampled_from(SHAPES)) | {"id": draw(st.integers(1, 10**6))}
    for _ in range(draw(st.sampled_from([0, 1, 1, 2, 2, 3]))):
        value = draw(wrong_kind | json_any | st.just(DELETE))
        shape = _changed(shape, draw(st.sampled_from(PATHS)), value)
    shape = draw(st.sampled_from([shape, shape, shape, draw(json_any)]))
    return json.dumps(shape).encode()  # ASCII escapes: lone surrogates travel as \ud800


nested = st.sampled_from([40, 5000]).map(lambda depth: b"[" * depth + b"]" * depth)
bodies = activities() | st.binary(max_size=64) | nested | st.just(b'{"id": 1e999}')


def issue_json(request: httpx.Request, key: str) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": 10_000 + int(key.rsplit("-", 1)[1]) % 10_000,
            "issueKey": key,
            "summary": "告知",
            "description": body(),
            "status": {"id": 2, "name": "処理中"},
            "customFields": [],
        },
    )


def fake_backlog_api(backlog: respx.MockRouter) -> None:
    """Backlog as it answers: the issue asked for (in progress), its comment, automedia itself."""
    backlog.get(url__regex=r"/api/v2/issues/(?P<key>[A-Z0-9_]+-\d+)(\?|$)").mock(side_effect=issue_json)
    backlog.get(url__regex=r"/api/v2/issues/[^/]+/comments/(?P<id>\d+)(\?|$)").mock(
        side_effect=lambda request, id: httpx.Response(
            200, json={"id": int(id), "content": "了解です", "createdUser": {"id": 1001, "name": "山田"}}
        )
    )
    backlog.get(url__regex=r"/api/v2/users/myself(\?|$)").respond(200, json={"id": 1, "userId": "automedia"})
    backlog.route().respond(404, json={"errors": [{"message": "No such thing.", "code": 6}]})


@webhook_fuzz
@given(raw=st.lists(bodies, min_size=1, max_size=3))
def test_any_body_gets_a_2xx_or_4xx_and_every_stored_event_ends(client, tenant, no_enqueue, raw):
    with transaction.atomic(), respx.mock(assert_all_called=False) as backlog:
        fake_backlog_api(backlog)
        codes = [post(client, webhook_url(tenant), one).status_code for one in raw]
        events_drain()

        assert all(200 <= code < 500 for code in codes), codes
        ends = {(e.outcome, e.detail) for e in BacklogEvent.objects.all()}
        assert {o for o, _ in ends} <= {"done", "ignored", "rejected"}, ends
        assert not any(detail.startswith("gave up") for _, detail in ends), ends
        transaction.set_rollback(True)

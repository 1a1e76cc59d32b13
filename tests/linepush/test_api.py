"""POST /api/linepush/items/ with a per-tenant token, and the drf-spectacular schema."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linepush.inbound_models import api_token_hash
from linepush.models import LineApiToken, LinePushItem
from tests.helpers.factories import TenantFactory
from tests.helpers.linepush import PUSH, group, reload, shop, step

pytestmark = pytest.mark.django_db
URL = "/api/linepush/items/"


@pytest.fixture
def tenant(db):
    return shop()


@pytest.fixture
def token(tenant):
    return LineApiToken.issue(tenant=tenant, name="talent-hub")[1]


def body(team, **fields) -> dict:
    return {
        "ext_group_id": team.group_id,
        "trigger_type": "signal_approved",
        "payload": [{"type": "text", "text": "契約の更新が承認されました"}],
        "source_table": "talent_signals",
        "source_id": "sig-42",
        "dedupe_key": "signal:sig-42:approved",
        **fields,
    }


def post(client, data, token: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post(URL, data, content_type="application/json", **headers)


def test_it_creates_an_item_and_answers_201(client, tenant, token):
    team = group(tenant)

    response = post(client, body(team), token)

    assert response.status_code == 201
    data = response.json()
    assert (data["dedupe_key"], data["status"], data["trigger_type"]) == (
        "signal:sig-42:approved",
        "waiting_approval",  # signal_approved needs a manager by default
        "signal_approved",
    )
    item = LinePushItem.objects.get(pk=data["id"])
    assert (item.tenant, item.source_table, item.source_id) == (tenant, "talent_signals", "sig-42")


def test_it_answers_200_with_the_existing_item_for_a_known_dedupe_key(client, tenant, token):
    team = group(tenant)
    first = post(client, body(team), token).json()

    again = post(client, body(team, payload=[{"type": "text", "text": "別の文面"}]), token)

    assert again.status_code == 200
    assert again.json()["id"] == first["id"]
    assert again.json()["payload"] == [{"type": "text", "text": "契約の更新が承認されました"}]
    assert LinePushItem.objects.count() == 1


def test_an_item_the_api_queued_is_sent_by_the_scheduler(client, tenant, line):
    team = group(tenant)
    token = LineApiToken.issue(tenant=tenant, name="hub", triggers=["task_approved"], skip_approval=True)[1]
    data = post(client, body(team, trigger_type="task_approved", dedupe_key="api-1"), token).json()

    step()

    assert reload(LinePushItem.objects.get(pk=data["id"])).status == "sent"
    assert line.sent(PUSH)[0].body["to"] == team.group_id


def test_it_answers_400_with_the_reasons(client, tenant, token):
    response = post(
        client,
        {"ext_group_id": "not-a-group", "trigger_type": "gossip", "payload": [], "scheduled_at": "tomorrow"},
        token,
    )

    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"ext_group_id", "trigger_type", "payload", "dedupe_key", "scheduled_at"}
    assert errors["payload"] == ["メッセージが 0 件あります（LINE は 1 回の送信で 1〜5 件）。"]
    assert errors["ext_group_id"] == ["LINE のグループID（C…）またはルームID（R…）を指定してください。"]
    assert not LinePushItem.objects.exists()


def test_it_answers_400_not_500_for_an_image_url_python_cannot_split(client, tenant, token):
    broken = "https://[cdn.example.jp/a.png"
    image = {"type": "image", "originalContentUrl": broken, "previewImageUrl": broken}

    response = post(client, body(group(tenant), payload=[image]), token)

    assert response.status_code == 400 and "originalContentUrl" in response.json()["payload"][0]
    assert not LinePushItem.objects.exists()


def test_it_answers_400_for_a_body_that_is_not_json(client, token):
    response = client.post(URL, "{", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 400


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", "Basic dXNlcjpwdw==", "Bearer "])
def test_it_answers_401_without_a_valid_token(client, tenant, token, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}

    response = client.post(URL, body(group(tenant)), content_type="application/json", **extra)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="linepush"'
    assert not LinePushItem.objects.exists()


def test_a_revoked_token_is_refused(client, tenant, token):
    from django.utils import timezone

    LineApiToken.objects.update(revoked_at=timezone.now())

    assert post(client, body(group(tenant)), token).status_code == 401


def test_another_tenants_key_answers_as_a_new_key_and_blocks_nothing(client, tenant, token):
    other = TenantFactory(slug="other")
    other_token = LineApiToken.issue(tenant=other, name="x")[1]
    team, their_team = group(tenant), group(other)
    mine = post(client, body(team), token).json()

    theirs = post(client, body(their_team, payload=[{"type": "text", "text": "別テナント"}]), other_token)

    assert theirs.status_code == 201  # as for a key nobody uses: nothing tells it exists elsewhere
    assert theirs.json()["id"] != mine["id"] and theirs.json()["ext_group_id"] == their_team.group_id
    assert sorted(LinePushItem.objects.values_list("tenant__slug", flat=True)) == ["other", "shop"]
    again = post(client, body(team, payload=[{"type": "text", "text": "二回目"}]), token)
    assert again.status_code == 200 and again.json() == mine  # the tenant's own item, unchanged


def test_the_token_is_stored_hashed_and_issued_by_a_command(tenant, capsys):
    call_command("linepush_token", "shop", "--name", "talent-hub")

    plain = capsys.readouterr().out.strip()
    row = LineApiToken.objects.get(name="talent-hub")
    assert plain.startswith("lp_") and len(plain) > 40
    assert row.token_hash == api_token_hash(plain) and plain not in (row.token_hash, row.prefix)
    assert row.prefix == plain[:10]


def test_the_schema_documents_the_endpoint(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = response.json()
    operation = schema["paths"][URL]["post"]
    assert set(operation["responses"]) == {"200", "201", "400", "401", "403", "409", "413", "429"}
    assert operation["security"] == [{"linepushToken": []}]
    assert schema["components"]["securitySchemes"]["linepushToken"]["scheme"] == "bearer"
    assert list(schema["paths"]) == [URL]  # webhooks are not part of the public API
    request = schema["components"]["schemas"]["PushItemIn"]
    assert {"ext_group_id", "payload", "dedupe_key"} <= set(request["required"])


def request_schema(client) -> dict:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    return response.json()["components"]["schemas"]["PushItemIn"]["properties"]


def test_the_schema_states_the_rules_the_view_applies(client):
    fields = request_schema(client)

    assert fields["ext_group_id"]["pattern"] == "^[CR][0-9A-Za-z_\\-]{1,63}$"
    assert (fields["payload"]["type"], fields["payload"]["minItems"], fields["payload"]["maxItems"]) == (
        "array",
        1,
        5,
    )
    assert "text" in fields["payload"]["items"]["properties"]["type"]["enum"]
    assert fields["payload"]["items"]["required"] == ["type"]
    assert fields["scheduled_at"]["format"] == "date-time"
    assert "5 分前から 365 日後まで" in fields["scheduled_at"]["description"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(group_id=st.from_regex(r"\A[CR][0-9A-Za-z_\-]{1,63}\Z"), count=st.integers(1, 5))
def test_a_request_the_schema_allows_is_never_refused_for_its_group_or_count(
    client, tenant, token, group_id, count
):
    LinePushItem.objects.all().delete()
    fields = request_schema(client)
    assert re.fullmatch(fields["ext_group_id"]["pattern"].strip("^$"), group_id)
    messages = [{"type": "text", "text": f"{n}"} for n in range(count)]

    response = post(
        client, body(group(tenant, group_id=None), ext_group_id=group_id, payload=messages), token
    )

    assert response.status_code == 201, response.json()

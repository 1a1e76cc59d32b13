"""POST /api/linepush/items/: payloads over LINE's size limits and bodies over the upload limit."""

from __future__ import annotations

import json

import pytest

from linepush.models import LineApiToken, LinePushItem
from tests.helpers.linepush import group, shop

pytestmark = pytest.mark.django_db
URL = "/api/linepush/items/"


@pytest.fixture
def tenant(db):
    return shop()


@pytest.fixture
def token(tenant):
    return LineApiToken.issue(tenant=tenant, name="talent-hub")[1]


def flex(text: str) -> dict:
    contents = {"type": "box", "layout": "vertical", "contents": [{"type": "text", "text": text}]}
    return {"type": "flex", "altText": "お知らせ", "contents": {"type": "bubble", "body": contents}}


def post(client, token: str, raw: str | bytes):
    return client.post(URL, raw, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def item(team, payload) -> str:
    body = {"ext_group_id": team.group_id, "payload": payload, "dedupe_key": "signal:sig-42:approved"}
    return json.dumps(body, ensure_ascii=False)


def test_it_answers_400_naming_the_message_and_the_limit_for_a_2_mb_flex(client, tenant, token):
    team = group(tenant)

    response = post(client, token, item(team, [{"type": "text", "text": "新着"}, flex("x" * 2_000_000)]))

    assert response.status_code == 400
    [bubble] = response.json()["payload"]
    assert bubble.startswith("2 件目のメッセージ: contents（bubble）の JSON が 2,000,")
    assert bubble.endswith("バイトあります（LINE の上限は 30 KB = 30,000 バイト）。")
    assert not LinePushItem.objects.exists()


def test_it_also_names_the_2_mb_of_one_push_when_asked(client, tenant, token, settings):
    settings.LINE_REFUSE_OVER_2MB = True
    team = group(tenant)

    response = post(client, token, item(team, [{"type": "text", "text": "新着"}, flex("x" * 2_000_000)]))

    assert response.status_code == 400
    bubble, whole = response.json()["payload"]
    assert bubble.endswith("バイトあります（LINE の上限は 30 KB = 30,000 バイト）。")
    assert whole.endswith("バイトあります（LINE の 1 回の送信の上限は 1,999,800 バイト）。")


def test_it_answers_400_for_a_template_text_over_lines_limit(client, tenant, token):
    template = {"type": "confirm", "text": "確" * 241, "actions": []}
    payload = [{"type": "template", "altText": "確認", "template": template}]

    response = post(client, token, item(group(tenant), payload))

    assert response.status_code == 400
    assert response.json()["payload"] == [
        "1 件目のメッセージ: template（confirm）: text が 241 文字あります（LINE の上限は 240 文字）。"
    ]


def test_it_queues_a_flex_within_lines_limit(client, tenant, token):
    response = post(client, token, item(group(tenant), [flex("x" * 29_000)]))

    assert response.status_code == 201
    assert LinePushItem.objects.get().payload[0]["contents"]["body"]["contents"][0]["text"] == "x" * 29_000


def test_it_answers_413_for_a_body_over_the_upload_limit(client, tenant, token, settings):
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 2_621_440  # Django's default, not loosened

    response = post(client, token, item(group(tenant), [flex("x" * 3_000_000)]))

    assert response.status_code == 413
    assert response.json() == {"detail": "リクエストの本文が大きすぎます（上限 2,621,440 バイト）。"}
    assert not LinePushItem.objects.exists()


def test_it_answers_401_before_reading_a_large_body_without_a_token(client, tenant):
    response = client.post(URL, "[" + " " * 3_000_000 + "]", content_type="application/json")

    assert response.status_code == 401


def test_it_answers_400_for_json_nested_too_deep(client, token):
    response = post(client, token, '{"payload": ' + "[" * 100_000 + "]" * 100_000 + "}")

    assert response.status_code == 400
    assert response.json() == {"detail": "JSON の入れ子が深すぎます。"}


@pytest.mark.parametrize("text", ["0\u0000", "\ud800"])
def test_it_answers_400_for_text_no_database_can_store(client, token, text):
    body = {"ext_group_id": "C" + "a" * 32, "payload": [{"type": "text", "text": text}], "dedupe_key": "k"}

    response = post(client, token, json.dumps(body))

    assert response.status_code == 400
    assert response.json()["detail"].startswith("保存できない文字を含んでいます")

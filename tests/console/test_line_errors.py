"""LINE's English errors explained in Japanese (console/line_errors.py)."""

from __future__ import annotations

import pytest
from django.utils import translation

from console.line_errors import line_error_explain


@pytest.fixture(autouse=True)
def _japanese():
    with translation.override("ja"):
        yield


def test_it_explains_a_refused_message_and_its_details():
    error = (
        "リクエストが拒否されました（400）: The request body has 2 error(s)"
        " / messages[0].text: May not be empty; messages[1].originalContentUrl: invalid uri scheme"
    )

    assert line_error_explain(error) == (
        "リクエストが拒否されました（400）: メッセージの内容に 2 か所の問題があります。"
        "1 件目のメッセージの本文: 空にできません。"
        "2 件目のメッセージの画像の URL: URL が正しくありません（https:// で始まる URL にしてください）"
    )


def test_it_explains_the_monthly_limit_and_the_rate_limit():
    held = "LINE の月間上限に達したため保留しました: You have reached your monthly limit."
    rate = "レート制限（429）: The API rate limit has been exceeded. Try again later."

    assert (
        line_error_explain(held)
        == "LINE の月間上限に達したため保留しました: 今月のメッセージ数の上限に達しました"
    )
    assert line_error_explain(rate).endswith(
        "LINE の送信回数の制限に達しました（しばらく待って再試行します）"
    )


def test_it_falls_back_to_the_status_code_for_words_it_does_not_know():
    explained = line_error_explain("リクエストが拒否されました（404）: The bot is gone somewhere")

    assert (
        explained
        == "リクエストが拒否されました（404）: 送信先が見つかりません（ボットがグループを退出したか、ID が違います）"
    )


def test_it_explains_an_attempts_bare_text_by_its_status():
    assert (
        line_error_explain("The request body has 1 error(s)", 400)
        == "メッセージの内容に 1 か所の問題があります"
    )
    assert line_error_explain("Unexpected thing", 401).startswith(
        "LINE チャネルのアクセストークンが無効か期限切れです"
    )


def test_it_drops_an_exception_name_and_keeps_japanese_as_it_is():
    assert line_error_explain("タイムアウトしました（ReadTimeout）") == "タイムアウトしました"
    assert line_error_explain("グループの上限を超えました") == "グループの上限を超えました"

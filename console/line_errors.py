"""LINE's English error text, explained in Japanese for managers (superusers also see the raw text).

An error is kept as automedia wrote it: a Japanese head (`リクエストが拒否されました（400）`),
then LINE's `message` and its `details` (`property: message`, line/transport.py).
The words LINE uses are in its reference: the error response
(https://developers.line.biz/en/reference/messaging-api/#error-responses) and the status codes
(https://developers.line.biz/en/reference/messaging-api/#status-codes). A message this table does
not know is explained by its status code alone; the raw text stays on the page for superusers.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_

# https://developers.line.biz/en/reference/messaging-api/#status-codes
STATUS = {
    400: N_("LINE がリクエストの内容を受け付けませんでした"),
    401: N_("LINE チャネルのアクセストークンが無効か期限切れです（設定のトークンを確認してください）"),
    403: N_("この操作の権限がありません（LINE の契約プランか権限を確認してください）"),
    404: N_("送信先が見つかりません（ボットがグループを退出したか、ID が違います）"),
    409: N_("同じ再送キーのリクエストを LINE がすでに受け付けています（二重送信はされていません）"),
    410: N_("LINE でこの対象はもう使えません"),
    413: N_("リクエストが大きすぎます（2 MB 以下にしてください）"),
    415: N_("LINE が扱えない形式のファイルです"),
    429: N_("LINE の送信回数の制限か今月の上限に達しました"),
    500: N_("LINE 側でエラーが起きました（自動で再試行します）"),
}

# LINE's `message` texts, as its reference and its answers word them.
MESSAGES = [
    (
        re.compile(r"The request body has (\d+) error\(s\)", re.I),
        N_("メッセージの内容に {0} か所の問題があります"),
    ),
    (re.compile(r"Invalid reply token", re.I), N_("返信用のトークンが無効です（期限切れか使用済み）")),
    (
        re.compile(r"API rate limit has been exceeded", re.I),
        N_("LINE の送信回数の制限に達しました（しばらく待って再試行します）"),
    ),
    (re.compile(r"monthly limit", re.I), N_("今月のメッセージ数の上限に達しました")),
    (re.compile(r"Authentication failed|invalid.*access token", re.I), STATUS[401]),
    (re.compile(r"Not found", re.I), STATUS[404]),
    (re.compile(r"already been accepted|retry key", re.I), STATUS[409]),
    (re.compile(r"Failed to send messages", re.I), N_("メッセージを送れませんでした")),
]

# The `details[].message` texts of a refused message object.
DETAILS = [
    (re.compile(r"May not be empty|must be specified|must not be null", re.I), N_("空にできません")),
    (re.compile(r"Length must be between (\d+) and (\d+)", re.I), N_("文字数は {1} 文字までです")),
    (re.compile(r"Size must be between (\d+) and (\d+)", re.I), N_("{0}〜{1} 件にしてください")),
    (re.compile(r"Must be one of the following values", re.I), N_("使えない値です")),
    (re.compile(r"uri|url", re.I), N_("URL が正しくありません（https:// で始まる URL にしてください）")),
    (re.compile(r"Invalid property", re.I), N_("使えない項目があります")),
]

FIELDS = {
    "text": N_("本文"),
    "altText": N_("通知文"),
    "originalContentUrl": N_("画像の URL"),
    "previewImageUrl": N_("プレビュー画像の URL"),
    "type": N_("種類"),
    "couponId": N_("クーポン"),
    "to": N_("送信先"),
    "messages": N_("メッセージ"),
}
PROPERTY = re.compile(r"messages\[(\d+)\]\.?(\w*)")
HEAD_STATUS = re.compile(r"（(\d{3})）|\((\d{3})\)|\b(\d{3})\b")
ASCII_ASIDE = re.compile(r"（[A-Za-z][\w.]*）")
ENGLISH = re.compile(r"[A-Za-z]{3,}")


def line_error_explain(error: str, status: int | None = None) -> str:
    """`error` with LINE's English replaced by Japanese; an error without English as it is."""
    error = ASCII_ASIDE.sub("", error)  # an exception's class name: タイムアウトしました（ReadTimeout）
    if not _has_english(error):
        return error
    head, _sep, tail = error.partition(": ")
    if _has_english(head):  # LINE's text alone (an attempt row), no Japanese head
        head, tail = "", error
    status = status or _status_in(head or error)
    message, _sep, details = tail.partition(" / ")
    parts = [_message(message, status), *(_detail(d) for d in details.split("; ") if d.strip())]
    explained = "。".join(p for p in parts if p)
    return f"{head}: {explained}" if head else explained


def _has_english(text: str) -> bool:
    return any(w not in ("LINE", "URL") for w in ENGLISH.findall(text))


def _status_in(text: str) -> int | None:
    match = HEAD_STATUS.search(text)
    return int(next(g for g in match.groups() if g)) if match else None


def _message(text: str, status: int | None) -> str:
    for pattern, japanese in MESSAGES:
        if match := pattern.search(text):
            return _(japanese).format(*match.groups())
    if not _has_english(text):
        return text
    return _(STATUS.get(status or 0, "LINE がエラーを返しました"))


def _detail(detail: str) -> str:
    prop, _sep, text = detail.rpartition(": ")
    where = _where(prop.strip())
    for pattern, japanese in DETAILS:
        if match := pattern.search(text):
            return (
                f"{where}: {_(japanese).format(*match.groups())}"
                if where
                else _(japanese).format(*match.groups())
            )
    return f"{where}: {_('内容に問題があります')}" if where else ""


def _where(prop: str) -> str:
    """`messages[0].text` → 「1 件目のメッセージの本文」."""
    if match := PROPERTY.fullmatch(prop):
        field = FIELDS.get(match.group(2), "") if match.group(2) else ""
        nth = _("%(n)d 件目のメッセージ") % {"n": int(match.group(1)) + 1}
        return f"{nth}の{_(field)}" if field else nth
    return _(FIELDS[prop]) if prop in FIELDS else ""

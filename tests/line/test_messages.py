"""validate_line_messages: LINE's size limits on flex and template messages, and on the whole push."""

from __future__ import annotations

import json

import pytest

from backlog_bridge.body.task import Attachment
from deliveries.channels.line.templates import render_messages
from deliveries.channels.placeholders import RenderError
from line.messages import validate_line_messages

ACTION = {"type": "message", "label": "はい", "text": "はい"}


def bubble(text: str = "x") -> dict:
    return {
        "type": "bubble",
        "body": {"type": "box", "layout": "vertical", "contents": [{"type": "text", "text": text}]},
    }


def bubble_of(size: int) -> dict:
    """A bubble whose compact UTF-8 JSON (as httpx sends it) is exactly `size` bytes."""
    empty = len(json.dumps(bubble(""), separators=(",", ":")).encode())
    return bubble("x" * (size - empty))


def flex(contents: dict) -> dict:
    return {"type": "flex", "altText": "お知らせ", "contents": contents}


def template(body: dict) -> dict:
    return {"type": "template", "altText": "確認", "template": body}


def test_it_accepts_a_bubble_of_30_kb_and_refuses_one_byte_more():
    assert validate_line_messages([flex(bubble_of(30_000))]) == []

    assert validate_line_messages([{"type": "text", "text": "x"}, flex(bubble_of(30_001))]) == [
        "2 件目のメッセージ: contents（bubble）の JSON が 30,001 バイトあります（LINE の上限は 30 KB = 30,000 バイト）。"
    ]


def test_it_counts_the_utf8_bytes_of_japanese_text():
    # 10,000 あ are 10,000 characters but 30,000 bytes of UTF-8, as sent.
    problems = validate_line_messages([flex(bubble("あ" * 10_000))])

    assert problems and "バイトあります（LINE の上限は 30 KB = 30,000 バイト）" in problems[0]


def test_it_refuses_a_2_mb_flex_naming_the_message_and_the_limit():
    problems = validate_line_messages([flex(bubble("x" * 2_000_000))])

    assert problems[0].startswith("1 件目のメッセージ: contents（bubble）の JSON が 2,000,")
    assert problems[0].endswith("（LINE の上限は 30 KB = 30,000 バイト）。")


def test_it_refuses_a_carousel_over_50_kb_though_each_bubble_fits():
    carousel = {"type": "carousel", "contents": [bubble_of(20_000)] * 3}

    assert validate_line_messages([flex(carousel)]) == [
        "1 件目のメッセージ: contents（carousel）の JSON が 60,035 バイトあります（LINE の上限は 50 KB = 50,000 バイト）。"
    ]


@pytest.mark.parametrize(
    "contents, problem",
    [
        (
            {"type": "carousel", "contents": [bubble()] * 13},
            "carousel に bubble が 13 個あります（LINE の上限は 12 個）。",
        ),
        ({"type": "carousel", "contents": []}, "carousel の contents（bubble の配列）がありません。"),
        ({"type": "box"}, "contents は type が bubble か carousel のオブジェクトである必要があります。"),
        (
            ["not", "an", "object"],
            "contents は type が bubble か carousel のオブジェクトである必要があります。",
        ),
    ],
)
def test_it_refuses_a_flex_container_line_refuses(contents, problem):
    assert validate_line_messages([flex(contents)]) == [f"1 件目のメッセージ: {problem}"]


def test_it_accepts_templates_within_lines_limits():
    column = {
        "thumbnailImageUrl": "https://x.jp/a.png",
        "title": "t" * 40,
        "text": "c" * 60,
        "actions": [ACTION] * 3,
    }
    messages = [
        template({"type": "buttons", "text": "b" * 160, "actions": [ACTION] * 4}),
        template({"type": "confirm", "text": "c" * 240, "actions": [ACTION] * 2}),
        template({"type": "carousel", "columns": [column] * 10}),
        template(
            {"type": "image_carousel", "columns": [{"imageUrl": "https://x.jp/a.png", "action": ACTION}] * 10}
        ),
    ]

    assert validate_line_messages(messages) == []


@pytest.mark.parametrize(
    "body, problem",
    [
        (
            {"type": "buttons", "text": "b" * 161, "actions": [ACTION]},
            "template（buttons）: text が 161 文字あります（LINE の上限は 160 文字）。",
        ),
        (
            {"type": "buttons", "title": "見出し", "text": "b" * 61, "actions": [ACTION]},
            "template（buttons）: text が 61 文字あります（LINE の上限は 60 文字）。",
        ),
        (
            {"type": "buttons", "title": "t" * 41, "text": "b", "actions": [ACTION]},
            "template（buttons）: title が 41 文字あります（LINE の上限は 40 文字）。",
        ),
        (
            {"type": "buttons", "text": "b", "actions": [ACTION] * 5},
            "template（buttons）: actions が 5 個あります（LINE の上限は 4 個）。",
        ),
        (
            {"type": "buttons", "thumbnailImageUrl": "http://x.jp/a.png", "text": "b", "actions": [ACTION]},
            "template（buttons）: thumbnailImageUrl「http://x.jp/a.png」は https の URL である必要があります。",
        ),
        ({"type": "buttons", "actions": [ACTION]}, "template（buttons）: text がありません。"),
        (
            {"type": "confirm", "text": "c" * 241, "actions": [ACTION] * 2},
            "template（confirm）: text が 241 文字あります（LINE の上限は 240 文字）。",
        ),
        (
            {"type": "carousel", "columns": [{"text": "c", "actions": [ACTION]}] * 11},
            "template（carousel）: columns が 11 列あります（LINE の上限は 10 列）。",
        ),
        (
            {"type": "carousel", "columns": [{"text": "c"}, {"text": "c" * 121}]},
            "template（carousel）: 2 列目: text が 121 文字あります（LINE の上限は 120 文字）。",
        ),
        (
            {
                "type": "image_carousel",
                "columns": [{"imageUrl": "https://x.jp/" + "a" * 2000, "action": ACTION}],
            },
            "template（image_carousel）: 1 列目: imageUrl が 2,013 文字あります（上限 2,000 文字）。",
        ),
        (
            {"type": "slideshow"},
            "template の type は buttons、confirm、carousel、image_carousel のどれかである必要があります。",
        ),
    ],
)
def test_it_refuses_a_template_over_lines_limits(body, problem):
    assert validate_line_messages([template(body)]) == [f"1 件目のメッセージ: {problem}"]


def test_it_counts_a_template_title_and_text_in_grapheme_clusters_as_line_does():
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one cluster, 8 UTF-16 units
    flag = "\U0001f1ef\U0001f1f5"  # one cluster, 4 UTF-16 units
    column = {"title": family * 40, "text": flag * 60, "actions": [ACTION]}

    assert validate_line_messages([template({"type": "carousel", "columns": [column]})]) == []
    assert (
        validate_line_messages([template({"type": "confirm", "text": flag * 240, "actions": [ACTION]})]) == []
    )
    assert validate_line_messages([template({**column, "type": "buttons", "title": family * 41})]) == [
        "1 件目のメッセージ: template（buttons）: title が 41 文字あります（LINE の上限は 40 文字）。"
    ]


def test_it_counts_a_text_message_in_utf16_units_as_line_does():
    assert validate_line_messages([{"type": "text", "text": "\U0001f34e" * 2_500}]) == []
    assert validate_line_messages([{"type": "text", "text": "\U0001f34e" * 2_500 + "x"}]) == [
        "1 件目のメッセージ: text が 5,001 文字あります（LINE の上限は 5,000 文字）。"
    ]


def big_imagemaps() -> list[dict]:
    # Each imagemap is within its own checks; together they exceed what LINE takes in one request.
    imagemap = {
        "type": "imagemap",
        "altText": "地図",
        "baseUrl": "https://x.jp/map",
        "baseSize": {"width": 1040, "height": 1040},
        "actions": [
            {"type": "message", "text": "x" * 500_000, "area": {"x": 0, "y": 0, "width": 1, "height": 1}}
        ],
    }

    return [imagemap] * 5


def test_it_leaves_the_2_mb_of_one_push_to_line_by_default():
    # Only third parties' copies of LINE's docs give the 2 MB: it is not a default.
    assert validate_line_messages(big_imagemaps()) == []


def test_it_refuses_messages_over_the_2_mb_of_one_push_when_asked(settings):
    settings.LINE_REFUSE_OVER_2MB = True

    problems = validate_line_messages(big_imagemaps())

    assert len(problems) == 1
    assert problems[0].startswith("メッセージ全体が 2,50")
    assert problems[0].endswith("バイトあります（LINE の 1 回の送信の上限は 1,999,800 バイト）。")


def test_a_template_whose_variables_make_a_bubble_too_large_does_not_render():
    with pytest.raises(RenderError) as raised:
        render_messages(messages=[flex(bubble("{{ body }}"))], variables={"body": "本文" * 6_000})

    assert raised.value.problems[0].endswith("バイトあります（LINE の上限は 30 KB = 30,000 バイト）。")


def test_a_coupon_message_names_its_coupon_and_keeps_its_delivery_tag_within_30():
    assert (
        validate_line_messages(
            [{"type": "coupon", "couponId": "01JYNW8JMQVFBNWF1APF8Z3FS7", "deliveryTag": "x" * 30}]
        )
        == []
    )

    assert validate_line_messages([{"type": "coupon", "deliveryTag": "x" * 31}]) == [
        "1 件目のメッセージ: couponId がありません。",
        "1 件目のメッセージ: deliveryTag が 31 文字あります（LINE の上限は 30 文字）。",
    ]


def test_a_url_with_an_unbalanced_bracket_is_a_problem_not_an_error():
    broken = "https://[cdn.example.jp/a.png"

    problems = validate_line_messages(
        [{"type": "image", "originalContentUrl": broken, "previewImageUrl": "https://x.jp/a.png"}]
    )

    assert problems == [
        f"1 件目のメッセージ: originalContentUrl「{broken}」は https の URL である必要があります。"
    ]


def test_an_attachment_with_an_unbalanced_bracket_is_no_image_and_no_error():
    text = [{"type": "text", "text": "本文"}]

    rendered = render_messages(
        messages=text, variables={}, attachments=[Attachment("画像", "https://[cdn.example.jp/a.png")]
    )

    assert rendered == text

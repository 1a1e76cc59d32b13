"""Template resolution (name@rev, latest, tenant over shared), rendering and LINE message checks."""

from __future__ import annotations

import pytest
import time_machine

from backlog_bridge.body.task import Attachment, TemplateRef
from deliveries.channels.line.templates import render_messages
from deliveries.channels.placeholders import RenderError, template_variables
from deliveries.channels.template_store import template_resolve, template_rev
from line.messages import validate_line_messages
from tests.helpers.factories import MessageTemplateFactory, TenantFactory

TEXT = [{"type": "text", "text": "{{ date }} より営業開始（{{hours}}）"}]
IMAGE_URL = "https://cdn.example.jp/banner.PNG?v=2"


def text(body: str = "こんにちは") -> dict:
    return {"type": "text", "text": body}


def image(url: str = "https://cdn.example.jp/a.png", preview: str | None = None) -> dict:
    return {"type": "image", "originalContentUrl": url, "previewImageUrl": preview or url}


# --- resolve --------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_resolves_a_revision_by_rev():
    wanted = MessageTemplateFactory(rev="aaaaaaaaaaaa")
    MessageTemplateFactory(rev="bbbbbbbbbbbb")

    assert template_resolve(tenant=None, ref=TemplateRef("announce_open", "aaaaaaaaaaaa")) == wanted


@pytest.mark.django_db
def test_it_resolves_the_name_alone_to_the_latest_revision():
    with time_machine.travel("2026-05-01 10:00Z", tick=False):
        MessageTemplateFactory(rev="aaaaaaaaaaaa")
    with time_machine.travel("2026-05-02 10:00Z", tick=False):
        latest = MessageTemplateFactory(rev="bbbbbbbbbbbb")
    with time_machine.travel("2026-04-30 10:00Z", tick=False):
        MessageTemplateFactory(rev="cccccccccccc")

    assert template_resolve(tenant=None, ref=TemplateRef("announce_open")) == latest


@pytest.mark.django_db
def test_it_breaks_a_created_at_tie_by_id():
    with time_machine.travel("2026-05-01 10:00Z", tick=False):
        MessageTemplateFactory(rev="aaaaaaaaaaaa")
        second = MessageTemplateFactory(rev="bbbbbbbbbbbb")

    assert template_resolve(tenant=None, ref=TemplateRef("announce_open")) == second


@pytest.mark.django_db
def test_it_prefers_the_tenants_own_template_over_the_shared_one():
    acme, other = TenantFactory(slug="acme"), TenantFactory(slug="other")
    shared = MessageTemplateFactory(rev="aaaaaaaaaaaa")
    own = MessageTemplateFactory(tenant=acme, rev="bbbbbbbbbbbb")
    MessageTemplateFactory(tenant=other, rev="cccccccccccc")

    assert template_resolve(tenant=acme, ref=TemplateRef("announce_open")) == own
    assert template_resolve(tenant=acme, ref=TemplateRef("announce_open", "aaaaaaaaaaaa")) == shared
    assert template_resolve(tenant=other, ref=TemplateRef("announce_open", "aaaaaaaaaaaa")) == shared


@pytest.mark.django_db
def test_it_never_resolves_another_tenants_template():
    MessageTemplateFactory(tenant=TenantFactory(slug="other"), rev="cccccccccccc")

    with pytest.raises(RenderError, match="announce_open@cccccccccccc」が見つかりません"):
        template_resolve(tenant=TenantFactory(slug="acme"), ref=TemplateRef("announce_open", "cccccccccccc"))


@pytest.mark.django_db
def test_it_resolves_a_unique_rev_prefix_of_seven_characters():
    wanted = MessageTemplateFactory(rev="3f2a9c1d4e5f")
    MessageTemplateFactory(rev="3f2b000000aa")

    assert template_resolve(tenant=None, ref=TemplateRef("announce_open", "3f2a9c1")) == wanted
    with pytest.raises(RenderError):
        template_resolve(tenant=None, ref=TemplateRef("announce_open", "3f2a9c"))


@pytest.mark.django_db
def test_it_names_every_match_of_an_ambiguous_rev_prefix():
    MessageTemplateFactory(rev="3f2a9c1aaaaa")
    MessageTemplateFactory(rev="3f2a9c1bbbbb")

    with pytest.raises(RenderError) as caught:
        template_resolve(tenant=None, ref=TemplateRef("announce_open", "3f2a9c1"))

    assert "複数" in str(caught.value)
    assert "3f2a9c1aaaaa" in str(caught.value) and "3f2a9c1bbbbb" in str(caught.value)


@pytest.mark.django_db
def test_it_names_the_known_revisions_when_the_rev_is_not_found():
    with time_machine.travel("2026-05-01 10:00Z", tick=False):
        MessageTemplateFactory(rev="aaaaaaaaaaaa")
    with time_machine.travel("2026-05-02 10:00Z", tick=False):
        MessageTemplateFactory(rev="bbbbbbbbbbbb")

    with pytest.raises(RenderError) as caught:
        template_resolve(tenant=None, ref=TemplateRef("announce_open", "0000000"))

    assert caught.value.problems == [
        "テンプレ「announce_open@0000000」が見つかりません"
        "（announce_open のリビジョン: bbbbbbbbbbbb（最新）、aaaaaaaaaaaa）。"
    ]


@pytest.mark.django_db
def test_it_says_when_no_revision_of_the_name_exists():
    with pytest.raises(RenderError) as caught:
        template_resolve(tenant=None, ref=TemplateRef("nothing_here"))

    assert "テンプレ「nothing_here」が見つかりません" in str(caught.value)
    assert "import_templates" in str(caught.value)


@pytest.mark.django_db
def test_it_only_resolves_templates_of_the_channel():
    MessageTemplateFactory(rev="aaaaaaaaaaaa", channel="instagram")

    with pytest.raises(RenderError):
        template_resolve(tenant=None, ref=TemplateRef("announce_open"))


# --- render ---------------------------------------------------------------------------


def test_it_fills_every_placeholder_with_or_without_spaces_in_the_braces():
    rendered = render_messages(messages=TEXT, variables={"date": "5月15日", "hours": "7:00-18:00"})

    assert rendered == [{"type": "text", "text": "5月15日 より営業開始（7:00-18:00）"}]


def test_it_fills_placeholders_in_nested_strings_and_leaves_the_template_untouched():
    flex = {
        "type": "flex",
        "altText": "{{ title }}",
        "contents": {
            "type": "bubble",
            "body": {
                "type": "box",
                "layout": "vertical",
                "contents": [
                    {"type": "text", "text": "{{ title }} / {{ date }}"},
                ],
            },
        },
    }
    template = [flex]

    rendered = render_messages(messages=template, variables={"title": "告知", "date": "明日"})

    assert rendered[0]["altText"] == "告知"
    assert rendered[0]["contents"]["body"]["contents"][0]["text"] == "告知 / 明日"
    assert template[0]["altText"] == "{{ title }}"


def test_it_does_not_fill_placeholders_inside_a_variables_value():
    rendered = render_messages(messages=TEXT, variables={"date": "{{ hours }}", "hours": "9時"})

    assert rendered[0]["text"] == "{{ hours }} より営業開始（9時）"


def test_it_names_every_missing_variable_once():
    messages = [text("{{ date }} {{ hours }}"), text("{{ date }} {{ place }}")]

    with pytest.raises(RenderError) as caught:
        render_messages(messages=messages, variables={"hours": "9時"})

    assert caught.value.problems == [
        "変数「date」がありません（「## 文面 / 変数」に - date: … を書いてください）。",
        "変数「place」がありません（「## 文面 / 変数」に - place: … を書いてください）。",
    ]
    assert str(caught.value) == "\n".join(caught.value.problems)


def test_it_lists_the_variables_a_template_uses():
    assert template_variables([text("{{ date }} {{hours}} {{ date }}")]) == ["date", "hours"]


def test_it_turns_https_image_attachments_into_image_messages():
    attachments = [
        Attachment("画像", IMAGE_URL),
        Attachment("画像", "https://cdn.example.jp/photo.jpeg"),
        Attachment("画像", "rich_menu_2026Q2.png"),
        Attachment("動画", "なし"),
        Attachment("資料", "https://example.jp/guide.pdf"),
    ]

    rendered = render_messages(messages=TEXT, variables={"date": "d", "hours": "h"}, attachments=attachments)

    assert rendered[1:] == [image(IMAGE_URL), image("https://cdn.example.jp/photo.jpeg")]


def test_it_rejects_an_http_image_attachment():
    with pytest.raises(RenderError) as caught:
        render_messages(
            messages=TEXT,
            variables={"date": "d"},
            attachments=[Attachment("画像", "http://cdn.example.jp/a.jpg")],
        )

    assert caught.value.problems == [
        "変数「hours」がありません（「## 文面 / 変数」に - hours: … を書いてください）。",
        "添付「画像: http://cdn.example.jp/a.jpg」の画像 URL は https で始まる必要があります"
        "（LINE は https の画像しか送れません）。",
    ]


def test_it_rejects_more_than_five_messages_after_the_attachments():
    attachments = [Attachment("画像", f"https://cdn.example.jp/{n}.png") for n in range(5)]

    with pytest.raises(RenderError, match="メッセージが 6 件あります"):
        render_messages(messages=TEXT, variables={"date": "d", "hours": "h"}, attachments=attachments)


def test_it_rejects_a_text_longer_than_5000_characters_after_filling():
    with pytest.raises(RenderError, match="text が 5,001 文字あります"):
        render_messages(messages=TEXT, variables={"date": "あ" * 4991, "hours": "h"})


# --- validate -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [text()],
        [text("あ" * 5000)],
        [text(), image(), {"type": "sticker", "packageId": "446", "stickerId": "1988"}],
        [text()] * 5,
        [
            {
                "type": "video",
                "originalContentUrl": "https://x.jp/a.mp4",
                "previewImageUrl": "https://x.jp/a.jpg",
            }
        ],
        [{"type": "audio", "originalContentUrl": "https://x.jp/a.m4a", "duration": 60000}],
        [{"type": "flex", "altText": "お知らせ", "contents": {"type": "bubble"}}],
        [
            {
                "type": "template",
                "altText": "確認",
                "template": {"type": "confirm", "text": "?", "actions": []},
            }
        ],
        [{"type": "location", "title": "店", "address": "東京都", "latitude": 35.6, "longitude": 139.7}],
    ],
    ids=["text", "text-5000", "mixed", "five", "video", "audio", "flex", "template", "location"],
)
def test_it_accepts_valid_line_messages(messages):
    assert validate_line_messages(messages) == []


@pytest.mark.parametrize(
    "messages, problem",
    [
        ({"type": "text", "text": "x"}, "配列"),
        ("text", "配列"),
        ([], "メッセージが 0 件あります"),
        ([text()] * 6, "メッセージが 6 件あります"),
        (["hello"], "1 件目のメッセージ: オブジェクト"),
        ([{"text": "x"}], "1 件目のメッセージ: type がありません"),
        (
            [text(), {"type": "banner"}],
            "2 件目のメッセージ: type「banner」は LINE のメッセージの種類ではありません",
        ),
        ([{"type": "text"}], "text がないか空です"),
        ([text("  ")], "text がないか空です"),
        ([text("あ" * 5001)], "text が 5,001 文字あります"),
        ([text("😀" * 2501)], "text が 5,002 文字あります"),
        ([image("http://x.jp/a.png")], "originalContentUrl「http://x.jp/a.png」は https の URL"),
        ([image(preview="ftp://x.jp/a.png")], "previewImageUrl「ftp://x.jp/a.png」は https の URL"),
        ([image("https://x.jp/" + "a" * 2000 + ".png")], "originalContentUrl が 2,017 文字あります"),
        ([{"type": "image", "originalContentUrl": "https://x.jp/a.png"}], "previewImageUrl がありません"),
        ([{"type": "video", "originalContentUrl": "http://x.jp/a.mp4"}], "https の URL"),
        ([{"type": "sticker", "packageId": "446"}], "stickerId がありません"),
        ([{"type": "flex", "contents": {"type": "bubble"}}], "altText"),
        ([{"type": "template", "altText": "あ" * 1501, "template": {}}], "altText が 1,501 文字あります"),
        ([{"type": "flex", "altText": "x"}], "contents がありません"),
    ],
)
def test_it_reports_invalid_line_messages(messages, problem):
    problems = validate_line_messages(messages)

    assert any(problem in p for p in problems), problems


# --- rev --------------------------------------------------------------------------


def test_it_derives_the_rev_from_the_content_not_its_formatting():
    rev = template_rev([{"type": "text", "text": "営業"}])

    assert rev == template_rev([{"text": "営業", "type": "text"}])
    assert rev != template_rev([{"type": "text", "text": "営業!"}])
    assert len(rev) == 12 and int(rev, 16) >= 0


def test_a_revision_once_resolved_is_served_without_a_query(db, django_assert_num_queries):
    template = MessageTemplateFactory(name="cached", rev="r1")
    tenant = TenantFactory()
    ref = TemplateRef.parse("cached@r1")
    with django_assert_num_queries(2):  # the tenant's own revisions, then the shared ones
        assert template_resolve(tenant=tenant, ref=ref) == template
    with django_assert_num_queries(0):
        assert template_resolve(tenant=tenant, ref=ref) == template
    with django_assert_num_queries(2):  # `name` alone (the latest) is always read
        assert template_resolve(tenant=tenant, ref=TemplateRef.parse("cached")) == template

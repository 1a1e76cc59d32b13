"""Instagram / TikTok / HubSpot templates: import per channel folder, errors that name the field."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from deliveries.channels.placeholders import RenderError
from deliveries.channels.post_templates import render_channel_template, url_field, validate_channel_template
from deliveries.models import MessageTemplate
from tests.helpers.channels import TEMPLATES

pytestmark = pytest.mark.django_db


def write(directory: Path, name: str, content: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(content, ensure_ascii=False), "utf-8")


def run(*args) -> str:
    out = StringIO()
    call_command("import_templates", *map(str, args), stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("channel", ["instagram", "tiktok", "hubspot"])
def test_it_takes_the_channel_from_the_folder_name(tmp_path, channel):
    write(tmp_path / channel, "post", TEMPLATES[channel])

    out = run(tmp_path / channel)

    template = MessageTemplate.objects.get()
    assert (template.name, template.channel, template.messages) == ("post", channel, TEMPLATES[channel])
    assert out.startswith(f"post@{template.rev} (new)")


def test_the_channel_option_wins_and_line_stays_the_default(tmp_path):
    write(tmp_path / "social", "post", TEMPLATES["instagram"])
    write(tmp_path / "line", "hello", [{"type": "text", "text": "こんにちは"}])

    run(tmp_path / "social", "--channel", "instagram")
    run(tmp_path / "line")

    assert dict(MessageTemplate.objects.values_list("name", "channel")) == {
        "post": "instagram",
        "hello": "line",
    }


def test_a_line_folder_refuses_a_channel_template(tmp_path):
    write(tmp_path / "line", "post", TEMPLATES["instagram"])

    with pytest.raises(CommandError):
        run(tmp_path / "line")
    assert not MessageTemplate.objects.exists()


def test_import_errors_name_the_field(tmp_path):
    write(
        tmp_path / "tiktok",
        "bad",
        {"type": "video", "title": "x", "video_url": "http://insecure/v.mp4", "privacy_level": "PUBLIC"},
    )
    out = StringIO()

    with pytest.raises(CommandError):
        call_command("import_templates", str(tmp_path / "tiktok"), stdout=out)

    line = out.getvalue()
    assert line.startswith("bad: error ")
    assert "video_url「http://insecure/v.mp4」は https の公開 URL" in line and "privacy_level は" in line


@pytest.mark.parametrize(
    ("channel", "content", "problem"),
    [
        ("instagram", {"type": "story", "image_url": "https://x/y.jpg"}, "type は image / reel / carousel"),
        ("instagram", {"type": "image", "caption": "x"}, "image_url がありません"),
        (
            "instagram",
            {"type": "image", "image_url": "https://x/y.jpg", "caption": "あ" * 2201},
            "caption が 2,201 文字",
        ),
        ("instagram", {"type": "carousel", "items": [{"image_url": "https://x/1.jpg"}]}, "items は 2〜10 件"),
        (
            "instagram",
            {"type": "carousel", "items": [{"image_url": "https://x/1.jpg"}, {"url": "https://x"}]},
            "items の 2 件目",
        ),
        (
            "instagram",
            {"type": "reel", "video_url": "https://x/v.mp4", "share_to_feed": "yes"},
            "share_to_feed は true / false",
        ),
        (
            "instagram",
            {"type": "image", "image_url": "https://x/y.jpg", "hashtags": []},
            "hashtags は instagram の image テンプレートでは使えない",
        ),
        (
            "tiktok",
            {"type": "video", "video_url": "https://x/v.mp4", "privacy_level": "SELF_ONLY"},
            "privacy_level はテンプレには書けません。課題本文の「## 配信メタ」に「- 公開範囲: …」",
        ),
        (
            "tiktok",
            {"type": "video", "video_url": "https://x/v.mp4", "disable_duet": True},
            "disable_duet はテンプレには書けません",
        ),
        ("tiktok", {"type": "photo", "photo_urls": []}, "photo_urls は 1〜35 件"),
        (
            "tiktok",
            {"type": "photo", "photo_urls": ["https://x/1.jpg"], "title": "あ" * 91},
            "title が 91 文字あります（上限 90 文字）",
        ),
        (
            "tiktok",
            {
                "type": "photo",
                "photo_urls": ["https://x/1.jpg"],
                "photo_cover_index": 3,
            },
            "photo_cover_index は 0〜0",
        ),
        ("hubspot", {"type": "note", "body": " "}, "body が空です"),
        ("hubspot", {"type": "email", "email_id": "abc"}, "email_id は HubSpot のメール ID"),
        ("hubspot", {"type": "email", "email_id": 1, "custom_properties": ["x"]}, "custom_properties は"),
        ("hubspot", ["not", "an", "object"], "JSON オブジェクト"),
    ],
)
def test_it_names_the_field_of_each_problem(channel, content, problem):
    problems = validate_channel_template(channel, content)

    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("channel", ["instagram", "tiktok", "hubspot"])
def test_the_fixture_templates_are_valid(channel):
    assert (
        validate_channel_template(
            channel,
            render_channel_template(
                channel, TEMPLATES[channel], {"date": "d", "image": "i.jpg", "video": "v.mp4"}
            ),
        )
        == []
    )


def test_rendering_names_every_missing_variable():
    with pytest.raises(RenderError) as caught:
        render_channel_template("instagram", TEMPLATES["instagram"], {})

    assert caught.value.problems == [
        "変数「date」がありません（「## 文面 / 変数」に - date: … を書いてください）。",
        "変数「image」がありません（「## 文面 / 変数」に - image: … を書いてください）。",
    ]


def test_the_shipped_templates_import(tmp_path):
    root = Path(__file__).resolve().parents[3] / "templates"
    for channel in ("instagram", "tiktok", "hubspot"):
        assert "error" not in run(root / channel)
    assert set(MessageTemplate.objects.values_list("channel", flat=True)) == {
        "instagram",
        "tiktok",
        "hubspot",
    }


def test_a_post_url_with_an_unbalanced_bracket_is_a_problem_not_an_error():
    assert url_field("https://[cdn.example.jp/v.mp4", "video_url") == [
        "video_url「https://[cdn.example.jp/v.mp4」は https の公開 URL である必要があります。"
    ]

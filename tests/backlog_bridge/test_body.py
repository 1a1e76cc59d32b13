from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from backlog_bridge.body.fingerprint import content_fingerprint
from backlog_bridge.body.issue import parse_issue
from backlog_bridge.body.publish_at import parse_publish_at
from backlog_bridge.body.task import Attachment, ParsedTask, TemplateRef

JST = ZoneInfo("Asia/Tokyo")

SEED_BODY = """\
[件名] ★ 新店舗オープンのお知らせ

## 配信メタ
- チャネル: LINE
- 投稿日時: 2026-05-15 10:00 (JST)
- 対象タグ: tag:active, !tag:opt_out
- テンプレ: announce_open@3f2a9c1

## 文面 / 変数
- date: 2026-05-15
- hours: 7:00-18:00

## 添付
- 画像: rich_menu_2026Q2.png
- 動画: なし

## 補足
- 雨天時の変更は別課題で
"""


def body(**meta: str | None) -> str:
    """The seed body with meta lines replaced (value) or removed (None)."""
    lines = {
        "チャネル": "LINE",
        "投稿日時": "2026-05-15 10:00 (JST)",
        "対象タグ": "tag:active, !tag:opt_out",
        "テンプレ": "announce_open@3f2a9c1",
    }
    lines.update(meta)
    meta_block = "\n".join(f"- {key}: {value}" for key, value in lines.items() if value is not None)
    return f"## 配信メタ\n{meta_block}\n\n## 文面 / 変数\n- date: 2026-05-15\n"


def with_variables(block: str) -> str:
    return body() + block


def custom(value: object, type_id: int = 1, name: str = "投稿日時") -> list[dict]:
    return [
        {"id": 1, "fieldTypeId": 1, "name": "担当", "value": "山田"},
        {"id": 2, "fieldTypeId": type_id, "name": name, "value": value},
    ]


def jst(*args: int) -> datetime:
    return datetime(*args, tzinfo=JST)


def errors_of(description: str | None, custom_fields: list[dict] | None = None) -> list[str]:
    return parse_issue(description=description, custom_fields=custom_fields).errors


def one_error(description: str | None, custom_fields: list[dict] | None = None) -> str:
    errors = errors_of(description, custom_fields)
    assert len(errors) == 1, errors
    return errors[0]


# --- the seed template -----------------------------------------------------------------


def test_it_parses_the_seed_template():
    task = parse_issue(description=SEED_BODY)

    assert task == ParsedTask(
        channel="line",
        publish_at=jst(2026, 5, 15, 10, 0),
        publish_at_source="body",
        audience="tag:active, !tag:opt_out",
        template=TemplateRef("announce_open", "3f2a9c1"),
        variables={"date": "2026-05-15", "hours": "7:00-18:00"},
        attachments=[Attachment("画像", "rich_menu_2026Q2.png")],
        errors=[],
    )
    assert task.ok is True


def test_it_reads_crlf_line_endings():
    assert parse_issue(description=SEED_BODY.replace("\n", "\r\n")).ok is True


def test_it_accepts_the_variables_heading_without_spaces():
    task = parse_issue(description=SEED_BODY.replace("## 文面 / 変数", "## 文面/変数"))

    assert task.variables == {"date": "2026-05-15", "hours": "7:00-18:00"}


def test_it_accepts_full_width_colons_after_keys():
    text = SEED_BODY.replace("チャネル: ", "チャネル：").replace("date: ", "date：")

    task = parse_issue(description=text)

    assert (task.channel, task.variables["date"]) == ("line", "2026-05-15")


def test_it_ignores_unknown_sections_and_text_before_the_first_heading():
    text = "前置き\n\n## メモ\nなんでも\n" + SEED_BODY + "\n## 補足\n自由に書ける\n"

    assert errors_of(text) == []


# --- チャネル ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "channel"),
    [
        ("LINE", "line"),
        ("line", "line"),
        ("TikTok", "tiktok"),
        ("TIKTOK", "tiktok"),
        ("Instagram", "instagram"),
        ("HubSpot", "hubspot"),
        ("ＬＩＮＥ", "line"),
    ],
)
def test_it_normalises_the_channel(written, channel):
    assert parse_issue(description=body(チャネル=written)).channel == channel


def test_it_accepts_the_channel_key_spelled_channeru():
    text = body(チャネル=None).replace("## 配信メタ\n", "## 配信メタ\n- チャンネル: TikTok\n")

    assert parse_issue(description=text).channel == "tiktok"


def test_it_names_an_unknown_channel_and_the_accepted_values():
    message = one_error(body(チャネル="Facebook"))

    assert message == (
        "チャネル「Facebook」には対応していません"
        "（LINE / Instagram / TikTok / HubSpot のいずれかを書いてください）。"
    )


def test_it_reports_the_unfilled_template_placeholder_as_an_unknown_channel():
    assert "チャネル「{LINE|TikTok|Instagram|HubSpot}」" in one_error(
        body(チャネル="{LINE|TikTok|Instagram|HubSpot}")
    )


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        ("チャネル", "「## 配信メタ」に チャネル がありません（例: - チャネル: LINE）。"),
        (
            "投稿日時",
            "「## 配信メタ」に 投稿日時 がありません（例: - 投稿日時: 2026-05-15 10:00 (JST)）。",
        ),
        (
            "テンプレ",
            "「## 配信メタ」に テンプレ がありません（例: - テンプレ: announce_open@3f2a9c1）。",
        ),
    ],
)
def test_it_requires_the_always_required_items(missing, expected):
    assert one_error(body(**{missing: None})) == expected


def test_it_reports_an_empty_channel_value():
    assert one_error(body(チャネル="")).startswith("チャネル が空です")


# --- 対象タグ ----------------------------------------------------------------------------


@pytest.mark.parametrize("channel", ["LINE", "HubSpot"])
def test_it_requires_an_audience_for_line_and_hubspot(channel):
    message = one_error(body(チャネル=channel, 対象タグ=None))

    assert message.startswith(f"チャネルが {channel} のときは 対象タグ が必要です")


@pytest.mark.parametrize("channel", ["TikTok", "Instagram"])
def test_it_does_not_require_an_audience_for_tiktok_and_instagram(channel):
    task = parse_issue(description=body(チャネル=channel, 対象タグ=None))

    assert (task.ok, task.audience) == (True, "")


def test_it_includes_the_audience_parser_message():
    message = one_error(body(対象タグ="tag:active, opt_out"))

    assert message.startswith("対象タグ「tag:active, opt_out」が不正です: ")
    assert "「opt_out」は tag:タグ名 か group:グループID の形で書いてください。" in message


def test_it_checks_the_audience_even_where_it_is_optional():
    assert one_error(body(チャネル="Instagram", 対象タグ="tag:")).startswith("対象タグ「tag:」")


def test_it_accepts_a_line_group_target():
    group = "C" + "0" * 32

    assert parse_issue(description=body(対象タグ=f"group:{group}")).audience == f"group:{group}"


def test_it_rejects_a_group_target_outside_line():
    message = one_error(body(チャネル="HubSpot", 対象タグ="group:C123"))

    assert message == "対象タグ の group: 指定は LINE でしか使えません（チャネル: HubSpot）。"


# --- テンプレ --------------------------------------------------------------------------


def test_it_reads_a_template_without_revision_as_latest():
    task = parse_issue(description=body(テンプレ="announce_open"))

    assert task.template == TemplateRef("announce_open", None)


@pytest.mark.parametrize(
    ("ref", "text"),
    [(TemplateRef("announce_open", "3f2a9c1"), "announce_open@3f2a9c1"), (TemplateRef("a"), "a")],
)
def test_it_formats_a_template_ref(ref, text):
    assert str(ref) == text
    assert TemplateRef.parse(text) == ref


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "テンプレが空です"),
        ("@3f2a9c1", "テンプレ「@3f2a9c1」にテンプレ名がありません"),
        ("announce_open@", "テンプレ「announce_open@」の @ の後にリビジョンがありません"),
        ("a@b@c", "テンプレ「a@b@c」に @ が 2 つ以上あります"),
        ("announce open", "テンプレ「announce open」のテンプレ名「announce open」に使えない文字"),
        (
            "announce_open@<commit>",
            "テンプレ「announce_open@<commit>」のリビジョン「<commit>」に使えない文字",
        ),
    ],
)
def test_it_explains_a_bad_template_ref(text, expected):
    with pytest.raises(ValueError) as caught:
        TemplateRef.parse(text)

    assert str(caught.value).startswith(expected)


def test_it_reports_a_bad_template_in_the_task():
    assert one_error(body(テンプレ="announce_open@")).startswith("テンプレ「announce_open@」の @")


# --- 投稿日時 (parse_publish_at) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-15 10:00", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15 10:00:30", jst(2026, 5, 15, 10, 0, 30)),
        ("2026/05/15 10:00", jst(2026, 5, 15, 10, 0)),
        ("2026/05/15 10:00:30", jst(2026, 5, 15, 10, 0, 30)),
        ("2026-05-15 10:00 (JST)", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15 10:00(JST)", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15 10:00 （JST）", jst(2026, 5, 15, 10, 0)),
        ("2026/05/15 10:00:30 (JST)", jst(2026, 5, 15, 10, 0, 30)),
        ("2026-05-15T10:00:00+09:00", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15T01:00:00Z", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15T01:00:00+00:00", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15T10:00:00", jst(2026, 5, 15, 10, 0)),
        ("2026-05-15T10:00", jst(2026, 5, 15, 10, 0)),
        ("  2026-05-15 10:00  ", jst(2026, 5, 15, 10, 0)),
    ],
)
def test_it_parses_each_accepted_publish_format(text, expected):
    parsed = parse_publish_at(text)

    assert parsed == expected
    assert parsed.utcoffset() == expected.utcoffset()


def test_it_returns_an_instant_for_utc_input():
    assert parse_publish_at("2026-05-15T01:00:00Z") == datetime(2026, 5, 15, 1, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("2026-02-30 10:00", "2026年2月は 28 日までですが 30 日になっています"),
        ("2028-02-30 10:00", "2028年2月は 29 日までですが 30 日になっています"),
        ("2026-13-01 10:00", "月は 1〜12 ですが 13 になっています"),
        ("2026-05-15 24:00", "時は 0〜23 ですが 24 になっています"),
        ("2026-05-15 10:60", "分と秒は 0〜59 です"),
    ],
)
def test_it_rejects_impossible_dates_with_the_reason(text, reason):
    with pytest.raises(ValueError) as caught:
        parse_publish_at(text)

    assert str(caught.value) == f"投稿日時「{text}」は存在しない日時です（{reason}）。"


@pytest.mark.parametrize(
    "text", ["明日の10時", "2026-05-15", "10:00", "2026.05.15 10:00", "15/05/2026 10:00"]
)
def test_it_names_the_value_and_the_accepted_formats(text):
    with pytest.raises(ValueError) as caught:
        parse_publish_at(text)

    message = str(caught.value)
    assert message.startswith(f"投稿日時「{text}」を日時として読めません。使える書式: ")
    assert "2026-05-15 10:00" in message and "2026-05-15T10:00:00+09:00" in message


def test_it_rejects_an_empty_publish_time():
    with pytest.raises(ValueError, match="投稿日時が空です"):
        parse_publish_at("  ")


def test_it_rejects_jst_label_with_a_different_offset():
    with pytest.raises(ValueError, match="\\(JST\\) と書かれていますが"):
        parse_publish_at("2026-05-15T10:00:00+00:00 (JST)")


def test_it_reports_a_bad_body_publish_time_in_the_task():
    message = one_error(body(投稿日時="2026-02-30 10:00"))

    assert message.startswith("本文の投稿日時「2026-02-30 10:00」は存在しない日時です")


def test_it_says_a_body_time_without_date_lacks_a_date():
    assert one_error(body(投稿日時="10:00")) == (
        "本文の投稿日時「10:00」に日付がありません（例: 2026-05-15 10:00）。"
    )


# --- 投稿日時 custom field ------------------------------------------------------------


def test_it_prefers_a_text_custom_field_over_the_body():
    task = parse_issue(description=body(), custom_fields=custom("2026-06-01 09:30"))

    assert (task.publish_at, task.publish_at_source) == (jst(2026, 6, 1, 9, 30), "custom_field")


def test_it_accepts_iso_in_a_textarea_custom_field():
    task = parse_issue(description=body(), custom_fields=custom("2026-06-01T00:30:00Z", type_id=2))

    assert task.publish_at == jst(2026, 6, 1, 9, 30)


def test_it_uses_the_custom_field_when_the_body_has_no_publish_time():
    task = parse_issue(description=body(投稿日時=None), custom_fields=custom("2026-06-01 09:30"))

    assert task.ok and task.publish_at == jst(2026, 6, 1, 9, 30)


def test_it_ignores_a_bad_body_publish_time_when_the_custom_field_wins():
    task = parse_issue(description=body(投稿日時="未定"), custom_fields=custom("2026-06-01 09:30"))

    assert task.ok is True


@pytest.mark.parametrize("value", [None, "", "  "])
def test_it_falls_back_to_the_body_when_the_custom_field_is_empty(value):
    task = parse_issue(description=body(), custom_fields=custom(value))

    assert (task.publish_at, task.publish_at_source) == (jst(2026, 5, 15, 10, 0), "body")


def test_it_reports_a_bad_text_custom_field():
    message = one_error(body(), custom("来週"))

    assert message.startswith("カスタムフィールドの投稿日時「来週」を日時として読めません。")


@pytest.mark.parametrize("value", ["2026-06-01", "2026-06-01T00:00:00Z"])
def test_it_combines_a_date_custom_field_with_the_body_time(value):
    task = parse_issue(description=body(), custom_fields=custom(value, type_id=4))

    assert (task.publish_at, task.publish_at_source) == (jst(2026, 6, 1, 10, 0), "custom_field")


def test_it_combines_a_date_custom_field_with_a_time_only_body():
    task = parse_issue(description=body(投稿日時="18:45 (JST)"), custom_fields=custom("2026-06-01", 4))

    assert task.ok and task.publish_at == jst(2026, 6, 1, 18, 45)


def test_it_takes_the_jst_time_of_day_from_an_iso_body():
    task = parse_issue(
        description=body(投稿日時="2026-05-15T01:00:00Z"), custom_fields=custom("2026-06-01", 4)
    )

    assert task.publish_at == jst(2026, 6, 1, 10, 0)


def test_it_requires_a_body_time_for_a_date_custom_field():
    message = one_error(body(投稿日時=None), custom("2026-06-01", type_id=4))

    assert message == (
        "カスタムフィールドの投稿日時は日付（2026-06-01）だけで時刻がありません。"
        "本文の「## 配信メタ」に時刻を書いてください（例: - 投稿日時: 10:00）。"
    )


def test_it_reports_an_unreadable_body_time_next_to_a_date_custom_field():
    message = one_error(body(投稿日時="朝"), custom("2026-06-01", type_id=4))

    assert message.startswith("本文の投稿日時「朝」から時刻を読めません")


@pytest.mark.parametrize("value", ["2026-02-30", "2026/06/01", "2026-06-01T15:00:00Z"])
def test_it_rejects_a_bad_date_custom_field(value):
    message = one_error(body(), custom(value, type_id=4))

    assert message.startswith(f"カスタムフィールドの投稿日時「{value}」を日付として読めません")


def test_it_rejects_an_unsupported_custom_field_type():
    message = one_error(body(), custom(12, type_id=3))

    assert "fieldTypeId=3" in message


def test_it_ignores_other_custom_fields():
    task = parse_issue(description=body(), custom_fields=custom("2026-06-01", name="公開日"))

    assert task.publish_at_source == "body"


# --- 文面 / 変数 --------------------------------------------------------------------------


def test_it_joins_indented_continuation_lines():
    task = parse_issue(description=with_variables("- body: 一行目\n  二行目\n    字下げ\n"))

    assert task.variables["body"] == "一行目\n二行目\n  字下げ"


def test_it_starts_a_value_on_the_next_line():
    task = parse_issue(description=with_variables("- body:\n  一行目\n  二行目\n"))

    assert task.variables["body"] == "一行目\n二行目"


def test_it_keeps_blank_lines_inside_a_continued_value():
    task = parse_issue(description=with_variables("- body: 一\n\n  三\n\n- next: x\n"))

    assert task.variables == {"date": "2026-05-15", "body": "一\n\n三", "next": "x"}


def test_it_strips_keys_and_values():
    task = parse_issue(description=with_variables("-   place  :   渋谷店   \n"))

    assert task.variables["place"] == "渋谷店"


def test_it_keeps_colons_inside_values():
    task = parse_issue(description=with_variables("- url: https://example.com/a?b=c:d\n"))

    assert task.variables["url"] == "https://example.com/a?b=c:d"


def test_it_reports_a_duplicate_variable_with_both_lines():
    text = with_variables("- date: 2026-05-16\n")

    assert one_error(text) == "変数「date」が 2 回あります（8 行目と 9 行目）。"


def test_it_reports_a_variable_line_without_key_value_form():
    message = one_error(with_variables("営業時間は7時から\n"))

    assert message.startswith(
        "「## 文面 / 変数」の 9 行目「営業時間は7時から」は「- キー: 値」の形ではありません"
    )


def test_it_reports_a_variable_key_with_spaces():
    assert one_error(with_variables("- open hours: 7:00\n")).startswith(
        "「## 文面 / 変数」の 9 行目の変数名「open hours」は使えません"
    )


def test_it_does_not_attach_continuations_to_a_rejected_line():
    task = parse_issue(description=with_variables("not a variable\n  continued\n"))

    assert task.variables == {"date": "2026-05-15"}
    assert len(task.errors) == 1


# --- 添付 ------------------------------------------------------------------------------


def test_it_lists_attachments_and_skips_nashi():
    text = body() + "\n## 添付\n- 画像: a.png\n- 画像: https://example.com/b.png\n- 動画: なし\n"

    assert parse_issue(description=text).attachments == [
        Attachment("画像", "a.png"),
        Attachment("画像", "https://example.com/b.png"),
    ]


def test_it_reports_an_attachment_without_kind():
    text = body() + "\n## 添付\n- https://example.com/b.png\n"

    assert one_error(text).startswith("「## 添付」の 11 行目に種類がありません")


# --- structure -------------------------------------------------------------------------


@pytest.mark.parametrize("description", [None, "", "   \n\n"])
def test_it_reports_a_missing_meta_section_for_an_empty_description(description):
    task = parse_issue(description=description)

    assert task.ok is False
    assert task.errors == [
        "本文に見出し「## 配信メタ」がありません。"
        "チャネル・投稿日時・対象タグ・テンプレはこの見出しの下に"
        "「- 項目: 値」の形で書いてください。"
    ]


def test_it_points_at_a_heading_written_at_the_wrong_level():
    message = one_error(SEED_BODY.replace("## 配信メタ", "### 配信メタ"))

    assert "（3 行目「### 配信メタ」は見出しとして読めません。行頭を「## 」にしてください）" in message


def test_it_reports_a_duplicated_section():
    text = SEED_BODY + "\n## 配信メタ\n- チャネル: TikTok\n"

    task = parse_issue(description=text)

    assert task.errors == [
        "見出し「## 配信メタ」が 2 回あります（3 行目、20 行目）。1 つにまとめてください。"
    ]
    assert task.channel == "line"


def test_it_reports_an_unknown_meta_item():
    message = one_error(body().replace("## 配信メタ\n", "## 配信メタ\n- 備考: 急ぎ\n"))

    assert message == (
        "「## 配信メタ」の 2 行目の項目「備考」は使えません"
        "（使える項目: チャネル、投稿日時、対象タグ、テンプレ）。"
    )


def test_it_reports_a_duplicate_meta_item_with_both_lines():
    message = one_error(body().replace("## 配信メタ\n", "## 配信メタ\n- チャネル: TikTok\n"))

    assert message == "「## 配信メタ」に チャネル が 2 回あります（2 行目と 3 行目）。"


def test_it_reports_a_meta_line_without_key_value_form():
    message = one_error(body().replace("## 配信メタ\n", "## 配信メタ\nLINEで送る\n"))

    assert message == "「## 配信メタ」の 2 行目「LINEで送る」は「- 項目: 値」の形ではありません。"


def test_it_collects_every_problem_at_once():
    text = (
        body(チャネル="Facebook", 投稿日時="2026-02-30 10:00", 対象タグ="tag:", テンプレ="x@")
        + "- date: again\nbroken\n"
    )

    errors = errors_of(text)

    assert [e.split("「")[0] for e in errors] == [
        "チャネル",
        "本文の投稿日時",
        "対象タグ",
        "テンプレ",
        "",
        "変数",
    ]


# --- JSON --------------------------------------------------------------------------------


def test_it_serialises_to_json_with_an_offset():
    data = parse_issue(description=SEED_BODY).to_json()

    assert json.loads(json.dumps(data)) == data
    assert data["publish_at"] == "2026-05-15T10:00:00+09:00"
    assert data["template"] == "announce_open@3f2a9c1"


@pytest.mark.parametrize(
    "task",
    [
        parse_issue(description=SEED_BODY),
        parse_issue(description=None),
        parse_issue(description=body(テンプレ="latest_only"), custom_fields=custom("2026-06-01", 4)),
    ],
)
def test_it_round_trips_through_json(task):
    restored = ParsedTask.from_json(json.loads(json.dumps(task.to_json())))

    assert restored == task
    assert restored.publish_at is None or restored.publish_at.tzinfo == JST


# --- content_fingerprint ---------------------------------------------------------------


def test_it_ignores_the_publish_time_in_the_fingerprint():
    moved = SEED_BODY.replace("2026-05-15 10:00 (JST)", "2026-05-20 19:00")

    assert content_fingerprint(moved) == content_fingerprint(SEED_BODY)


def test_it_ignores_whitespace_noise_in_the_fingerprint():
    noisy = SEED_BODY.replace("\n", "   \r\n").replace("## 添付", "\n\n\n## 添付") + "\n\n"

    assert content_fingerprint(noisy) == content_fingerprint(SEED_BODY)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("hours: 7:00-18:00", "hours: 8:00-18:00"),
        ("announce_open@3f2a9c1", "announce_open@4b5c6d7"),
        ("tag:active, !tag:opt_out", "tag:active"),
        ("雨天時", "荒天時"),
    ],
)
def test_it_changes_the_fingerprint_when_content_changes(old, new):
    assert content_fingerprint(SEED_BODY.replace(old, new)) != content_fingerprint(SEED_BODY)


def test_it_fingerprints_a_missing_description_like_an_empty_one():
    assert content_fingerprint(None) == content_fingerprint("") == content_fingerprint("\n \n")


def test_it_gives_a_sha256_hex_fingerprint():
    fingerprint = content_fingerprint(SEED_BODY)

    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0


# --- never raises --------------------------------------------------------------------------

FUZZ_PIECES = [
    "## 配信メタ\n",
    "## 文面 / 変数\n",
    "## 添付\n",
    "##",
    "### 配信メタ\n",
    "- ",
    "* ",
    "・",
    "チャネル",
    "投稿日時",
    "対象タグ",
    "テンプレ",
    ": ",
    "：",
    "LINE",
    "tiktok",
    "2026-05-15",
    "2026/02/30",
    " 10:00",
    "24:61",
    "T10:00:00Z",
    "+09:00",
    "(JST)",
    "（JST）",
    "9999-12-31T23:59:59-14:00",
    "0000-01-01 00:00",
    "tag:",
    "!",
    "|",
    ",",
    "group:",
    "@",
    "announce",
    "\n",
    "\r\n",
    "\r",
    "  ",
    "\t",
    "\u3000",
    "なし",
    "画像",
    "😀",
    "\x00",
    "\ufeff",
    "٢٠٢٦",
    "//",
    "date",
    "-",
]


def fuzz_descriptions(count: int):
    rng = random.Random(20260515)
    for _ in range(count):
        yield "".join(rng.choice(FUZZ_PIECES) for _ in range(rng.randint(0, 60)))


def fuzz_custom_fields(rng: random.Random) -> object:
    values = [None, "", "2026-06-01", "2026-06-01T00:00:00Z", "x", 3, {"id": 1}, ["a"], "10:00"]
    return rng.choice(
        [
            None,
            [],
            "not a list",
            [None, 1, "x"],
            [
                {
                    "name": "投稿日時",
                    "fieldTypeId": rng.choice([1, 2, 3, 4, "4", None, "x"]),
                    "value": rng.choice(values),
                }
            ],
        ]
    )


def test_it_never_raises_on_arbitrary_descriptions():
    rng = random.Random(7)
    for description in fuzz_descriptions(3000):
        task = parse_issue(description=description, custom_fields=fuzz_custom_fields(rng))

        assert isinstance(task.errors, list)
        assert ParsedTask.from_json(json.loads(json.dumps(task.to_json()))) == task
        assert len(content_fingerprint(description)) == 64


def test_it_only_raises_value_error_from_the_value_parsers():
    for text in fuzz_descriptions(3000):
        for parse in (parse_publish_at, TemplateRef.parse):
            try:
                parse(text)
            except ValueError as exc:
                assert str(exc)


def _tiktok_body(*lines: str, channel: str = "TikTok") -> str:
    return f"## 配信メタ\n- チャネル: {channel}\n- 投稿日時: 2026-05-15 10:00\n- テンプレ: clip\n" + "".join(
        f"{line}\n" for line in lines
    )


def test_it_reads_tiktoks_posting_choices():
    parsed = parse_issue(
        description=_tiktok_body(
            "- 公開範囲: public_to_everyone",
            "- コメント： 許可",
            "- デュエット: 不可",
            "- スティッチ: 許可",
            "- 商用コンテンツ: 自社",
            "- 音楽利用確認: 同意",
        )
    )

    assert parsed.ok, parsed.errors
    assert parsed.tiktok == {
        "privacy_level": "PUBLIC_TO_EVERYONE",
        "comment": True,
        "duet": False,
        "stitch": True,
        "commercial": "own",
        "music_usage": True,
    }
    assert ParsedTask.from_json(json.loads(json.dumps(parsed.to_json()))).tiktok == parsed.tiktok


@pytest.mark.parametrize(
    ("written", "level"), [("自分のみ", "SELF_ONLY"), ("フォロワー", "FOLLOWER_OF_CREATOR")]
)
def test_it_reads_the_privacy_level_by_the_name_tiktok_shows(written, level):
    assert parse_issue(description=_tiktok_body(f"- 公開範囲: {written}")).tiktok == {"privacy_level": level}


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("- 公開範囲: PUBLIC", "公開範囲「PUBLIC」は使えません（PUBLIC_TO_EVERYONE / MUTUAL_FOLLOW_FRIENDS"),
        ("- コメント: はい", "コメント「はい」は「許可」か「不可」で書いてください。"),
        ("- 商用コンテンツ: 他社", "商用コンテンツ「他社」は使えません（なし / 自社 / ブランド のどれか）。"),
        ("- 音楽利用確認: 不同意", "音楽利用確認「不同意」は「同意」とだけ書けます"),
    ],
)
def test_it_names_a_tiktok_choice_it_cannot_read(line, error):
    parsed = parse_issue(description=_tiktok_body(line))

    assert error in " ".join(parsed.errors)


def test_it_refuses_tiktoks_choices_on_another_channel():
    parsed = parse_issue(
        description=_tiktok_body("- 公開範囲: SELF_ONLY", channel="LINE") + "- 対象タグ: tag:a\n"
    )

    assert any("公開範囲 は TikTok の投稿でだけ使えます（チャネル: line）" in e for e in parsed.errors)
    assert parsed.tiktok == {}

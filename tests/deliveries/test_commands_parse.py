"""Parsing `/automedia` comment commands: only real command lines, each once."""

from __future__ import annotations

import pytest

from deliveries.comment_commands.parse import Command, commands_parse, correction_section


def verbs(text: str) -> list[str]:
    return [c.verb for c in commands_parse(text).commands]


def test_it_finds_a_command_line():
    assert commands_parse("確認お願いします\n/automedia status\n").commands == [Command("status")]


def test_it_ignores_text_that_merely_mentions_the_prefix():
    assert commands_parse("先ほど /automedia status を実行しました").empty


@pytest.mark.parametrize(
    "text",
    [
        "```\n/automedia cancel\n```",
        "{code}\n/automedia cancel\n{/code}",
        "{quote}\n/automedia cancel\n{/quote}",
        "> /automedia cancel",
        "＞ /automedia cancel",
    ],
)
def test_it_ignores_commands_in_code_blocks_and_quotes(text):
    assert commands_parse(text).empty


def test_it_runs_several_commands_in_order_and_each_once():
    assert verbs("/automedia preview\n/automedia status\n/automedia preview") == ["preview", "status"]


def test_it_reads_send_arguments_with_spaces_and_commas_in_the_audience():
    [command] = commands_parse(
        "/automedia send template=announce_open@r2 audience=tag:active, !tag:opt_out"
    ).commands

    assert command.kwargs == {"template": "announce_open@r2", "audience": "tag:active, !tag:opt_out"}


def test_it_accepts_quoted_values():
    [command] = commands_parse('/automedia send audience="tag:vip | tag:staff" template=reminder').commands

    assert command.kwargs == {"template": "reminder", "audience": "tag:vip | tag:staff"}


def test_it_allows_only_one_send_per_comment():
    parsed = commands_parse("/automedia send template=a\n/automedia send template=b")

    assert [c.kwargs["template"] for c in parsed.commands] == ["a"]
    assert "1 回まで" in parsed.problems[0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("/automedia", "コマンドがありません"),
        ("/automedia publish", "知らないコマンド"),
        ("/automedia send", "template=<テンプレ名> が必要"),
        ("/automedia send audience=tag:a", "template=<テンプレ名> が必要"),
        ("/automedia send template=a colour=red", "使えない引数です: colour"),
        ("/automedia status now", "key=value"),
        ("/automedia cancel force=yes", "使えない引数です: force"),
        ("/automedia send template=", "template の値がありません"),
        ("/automedia send template=a template=b", "2 回指定"),
    ],
)
def test_it_names_the_problem_of_a_bad_command(text, problem):
    parsed = commands_parse(text)

    assert parsed.commands == []
    assert problem in parsed.problems[0]


def test_it_never_raises_on_odd_input():
    for text in (
        None,
        "",
        "/automedia send template='unclosed",
        "/automedia\u3000status",
        "\r\n/automedia status\r\n",
    ):
        commands_parse(text)


def test_it_carries_the_correction_section_as_the_text_of_correct():
    text = "/automedia correct\n先ほどの件です。\n## 訂正\n営業時間は 8:00-18:00 です。\n\nご迷惑をおかけしました。\n## メモ\n社内向け"

    parsed = commands_parse(text)

    assert parsed.commands == [
        Command("correct", (("text", "営業時間は 8:00-18:00 です。\n\nご迷惑をおかけしました。"),))
    ]
    assert correction_section("/automedia correct") == ""


def test_correct_takes_no_arguments():
    assert commands_parse("/automedia correct text=x").problems == ["correct: 使えない引数です: text"]

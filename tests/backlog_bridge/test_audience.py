from __future__ import annotations

import pytest

from backlog_bridge.audience import Audience, AudienceError, Literal, parse_audience

GROUP_A = "C" + "0123456789abcdef" * 2
GROUP_B = "C" + "fedcba9876543210" * 2


def test_it_parses_the_seed_example_into_and_terms():
    audience = parse_audience("tag:active, !tag:opt_out")

    assert audience == Audience(
        terms=(
            (Literal("tag", "active", negated=False),),
            (Literal("tag", "opt_out", negated=True),),
        )
    )


def test_it_parses_pipe_as_or_inside_a_term():
    audience = parse_audience("tag:vip|tag:gold, !tag:opt_out")

    assert audience.terms[0] == (Literal("tag", "vip"), Literal("tag", "gold"))


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({"active"}, True),
        ({"active", "opt_out"}, False),
        (set(), False),
        ({"opt_out"}, False),
        ({"active", "other"}, True),
    ],
)
def test_it_matches_and_with_negation(tags, expected):
    assert parse_audience("tag:active, !tag:opt_out").matches(tags) is expected


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({"vip"}, True),
        ({"gold"}, True),
        ({"bronze"}, False),
        ({"gold", "opt_out"}, False),
    ],
)
def test_it_matches_or_inside_a_term(tags, expected):
    assert parse_audience("tag:vip|tag:gold, !tag:opt_out").matches(tags) is expected


def test_it_matches_a_negated_literal_inside_an_or_term():
    audience = parse_audience("tag:vip|!tag:trial")

    assert audience.matches(set()) is True
    assert audience.matches({"trial"}) is False
    assert audience.matches({"trial", "vip"}) is True


def test_it_accepts_japanese_tag_names():
    audience = parse_audience("tag:東京ファン, !tag:退会予定")

    assert audience.matches({"東京ファン"}) is True
    assert audience.matches({"東京ファン", "退会予定"}) is False


def test_it_tolerates_spaces_around_separators():
    assert str(parse_audience("  tag:a |tag:b ,   ! tag:c ")) == "tag:a|tag:b, !tag:c"


def test_it_reads_full_width_separators_typed_on_a_japanese_ime():
    assert str(parse_audience("tag：active、！tag：opt_out｜tag：x")) == "tag:active, !tag:opt_out|tag:x"


def test_it_reads_the_literal_kind_case_insensitively():
    assert parse_audience("TAG:active").terms == ((Literal("tag", "active"),),)


@pytest.mark.parametrize(
    "text",
    [
        "tag:active, !tag:opt_out",
        "tag:vip|tag:gold, !tag:opt_out|tag:staff",
        f"group:{GROUP_A}|group:{GROUP_B}",
        "tag:東京ファン",
    ],
)
def test_it_round_trips_through_its_canonical_text(text):
    audience = parse_audience(text)

    assert parse_audience(str(audience)) == audience
    assert str(audience) == text


def test_it_lists_group_ids_once_in_order():
    audience = parse_audience(f"group:{GROUP_B}|group:{GROUP_A}, group:{GROUP_B}")

    assert audience.groups == [GROUP_B, GROUP_A]


def test_it_treats_a_groups_only_expression_as_a_group_target():
    assert parse_audience(f"group:{GROUP_A}").is_group_target is True


def test_it_does_not_treat_a_tag_expression_as_a_group_target():
    audience = parse_audience("tag:active")

    assert audience.is_group_target is False
    assert audience.groups == []


def test_it_accepts_any_word_like_group_id():
    assert parse_audience("group:test-group_1").groups == ["test-group_1"]


def test_it_does_not_filter_contacts_by_group_literals():
    assert parse_audience(f"group:{GROUP_A}").matches(set()) is True


@pytest.mark.parametrize("text", ["", "   ", None])
def test_it_rejects_an_empty_expression(text):
    with pytest.raises(AudienceError, match="対象タグが空です"):
        parse_audience(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tag:", "「tag:」にタグ名がありません"),
        ("active", "「active」は tag:タグ名 か group:グループID の形で"),
        ("label:active", "「label:active」は tag:タグ名 か group:グループID の形で"),
        ("tag:opt out", "「tag:opt out」のタグ名「opt out」に使えない文字があります"),
        ("tag:a:b", "「tag:a:b」のタグ名「a:b」に使えない文字があります"),
        ("group:", "「group:」にグループIDがありません"),
        ("group:Cあいう", "「group:Cあいう」のグループID「Cあいう」に使えない文字があります"),
        ("!!tag:a", "「!!tag:a」は tag:タグ名 か group:グループID の形で"),
    ],
)
def test_it_names_the_bad_token(text, expected):
    with pytest.raises(AudienceError) as caught:
        parse_audience(text)

    assert expected in str(caught.value)


@pytest.mark.parametrize("text", ["tag:a,,tag:b", "tag:a,", ", tag:a"])
def test_it_rejects_an_empty_term(text):
    with pytest.raises(AudienceError, match="「,」の前後に条件がありません"):
        parse_audience(text)


@pytest.mark.parametrize("text", ["tag:a||tag:b", "tag:a|", "|tag:a"])
def test_it_rejects_an_empty_alternative(text):
    with pytest.raises(AudienceError, match="「\\|」の前後に条件がありません"):
        parse_audience(text)


@pytest.mark.parametrize(
    "text", [f"group:{GROUP_A}, tag:active", f"group:{GROUP_A}|tag:active", "tag:a, group:x"]
)
def test_it_rejects_mixing_groups_and_tags(text):
    with pytest.raises(AudienceError, match="group: と tag: を同じ式に混ぜることはできません"):
        parse_audience(text)


def test_it_rejects_a_negated_group():
    with pytest.raises(AudienceError, match=f"「!group:{GROUP_A}」: グループを除外する指定"):
        parse_audience(f"group:{GROUP_B}|!group:{GROUP_A}")


def test_it_rejects_a_tag_that_is_both_required_and_excluded():
    with pytest.raises(AudienceError, match="「tag:a」と「!tag:a」を同時に指定しているため"):
        parse_audience("tag:a, !tag:a")


def test_it_reports_every_bad_token_at_once():
    with pytest.raises(AudienceError) as caught:
        parse_audience("tag:, foo, tag:ok")

    assert len(caught.value.problems) == 2
    assert "「tag:」" in caught.value.problems[0]
    assert "「foo」" in caught.value.problems[1]


def test_it_raises_a_value_error_subclass():
    assert issubclass(AudienceError, ValueError)

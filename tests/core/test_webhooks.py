"""core/webhooks.py parses a webhook body whatever its depth: parts nested deeper than
Python's parser recurses are cut out and reported as too deep, the rest kept as sent."""

from __future__ import annotations

import pytest

from core.webhooks import CUT, DEEP, MAX_JSON_DEPTH, TOO_DEEP, body_json, json_parse, json_problem


def nested(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


def test_it_cuts_out_only_the_parts_too_deep_for_the_parser():
    raw = f'{{"a": {nested(5000)}, "b": ["]]]", {{"c": "[[[["}}], "d": {nested(3)}}}'

    value = json_parse(raw.encode())

    assert value["b"] == ["]]]", {"c": "[[[["}] and value["d"] == [[[1]]]
    cut = value["a"]
    for _ in range(MAX_JSON_DEPTH - 1):
        cut = cut[0]
    assert cut == CUT
    assert json_problem(value) == DEEP and json_problem(value["b"]) == ""


def test_it_reports_depth_from_where_a_part_sits_in_its_body():
    part = [[["x"]]]

    assert json_problem(part, depth=MAX_JSON_DEPTH - 2) == ""
    assert json_problem(part, depth=MAX_JSON_DEPTH - 1) == DEEP


@pytest.mark.parametrize("raw", [nested(40), nested(100_000)], ids=["40-levels", "100000-levels"])
def test_body_json_still_refuses_a_body_nested_too_deep(raw):
    with pytest.raises(ValueError, match=TOO_DEEP):
        body_json(raw.encode())


@pytest.mark.parametrize("raw", [b"[1,,2]", b'{"a": NaN}', b"\xff"])
def test_it_refuses_what_is_not_json(raw):
    with pytest.raises(ValueError, match="^body is not"):
        json_parse(raw)

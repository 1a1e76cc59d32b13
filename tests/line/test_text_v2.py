"""textV2 (LINE's text message v2): `{key}` placeholders of the text turned into a mention
of one user or of everyone, or a LINE emoji, by its `substitution`; templates render it and
the validator checks it, as LINE's spec has it (messaging-api.yml `TextMessageV2`)."""

from __future__ import annotations

import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from deliveries.channels.line.templates import render_messages, template_problems
from deliveries.channels.placeholders import RenderError
from line.messages import validate_line_messages
from line.transport import push_body
from tests.contracts.openapi import SCHEMAS, OpenApi30Validator, load_spec, with_discriminator_bases

SPEC_URI = "urn:line-openapi:messaging-api"
GROUP_ID = "C" + "0" * 32
TALENT = "U" + "a" * 32
EVERYONE = {"type": "mention", "mentionee": {"type": "all"}}
SMILE = {"type": "emoji", "productId": "5ac1bfd5040ab15980c9b435", "emojiId": "002"}


def v2(text: str, **substitution) -> dict:
    return {"type": "textV2", "text": text, "substitution": substitution}


def spec_errors(body: dict) -> list[str]:
    resource = Resource.from_contents(
        with_discriminator_bases(load_spec("messaging-api.yml")), default_specification=DRAFT4
    )
    validator = OpenApi30Validator(
        {"$ref": f"{SPEC_URI}{SCHEMAS}PushMessageRequest"},
        registry=Registry().with_resource(SPEC_URI, resource),
    )
    return [e.message for e in validator.iter_errors(body)]


VALID = {
    "mention-everyone": v2("{everyone} 明日は撮影です", everyone=EVERYONE),
    "mention-a-user": v2(
        "{talent} さん、明日は撮影です {smile}",
        talent={"type": "mention", "mentionee": {"type": "user", "userId": TALENT}},
        smile=SMILE,
    ),
    "no-substitution": {"type": "textV2", "text": "明日は撮影です"},
}


@pytest.mark.parametrize("message", VALID.values(), ids=VALID.keys())
def test_it_accepts_what_lines_spec_accepts(message):
    assert validate_line_messages([message]) == []
    assert spec_errors(push_body(to=GROUP_ID, messages=[message])) == []


WRONG = {
    "key-without-substitution": (
        v2("{talent} さん", everyone=EVERYONE),
        "text の {talent} に対応する substitution がありません",
    ),
    "substitution-a-list": (
        {"type": "textV2", "text": "x", "substitution": [EVERYONE]},
        "substitution は {キー: 置き換え}",
    ),
    "unknown-type": (v2("{a}", a={"type": "sticker"}), "substitution「a」: type は mention か emoji"),
    "mentionee-missing": (v2("{a}", a={"type": "mention"}), "substitution「a」: mentionee は type が user"),
    "user-without-id": (
        v2("{a}", a={"type": "mention", "mentionee": {"type": "user"}}),
        "mentionee の userId がありません",
    ),
    "emoji-without-id": (
        v2("{a}", a={"type": "emoji", "productId": "p"}),
        "substitution「a」: emojiId がありません",
    ),
    "empty-text": (v2("", a=EVERYONE), "text がないか空です"),
}


@pytest.mark.parametrize("case", WRONG, ids=WRONG.keys())
def test_it_names_what_is_wrong_with_a_substitution(case):
    message, problem = WRONG[case]

    problems = validate_line_messages([message])

    assert len(problems) == 1 and problems[0].startswith("1 件目のメッセージ: ") and problem in problems[0]
    if case in SPEC_REFUSES:  # the validator agrees with LINE's spec where the spec has a rule
        assert spec_errors(push_body(to=GROUP_ID, messages=[message])) != []


# The spec has no rule on the text's keys nor on an empty text: those two are automedia's own.
SPEC_REFUSES = set(WRONG) - {"key-without-substitution", "empty-text"}


def test_a_template_mentions_the_user_its_variables_name():
    talent = {"type": "mention", "mentionee": {"type": "user", "userId": "{{ talent_line_id }}"}}
    template = [v2("{talent} さん、{{ date }} は撮影です", talent=talent)]

    assert template_problems(template) == []
    rendered = render_messages(messages=template, variables={"talent_line_id": TALENT, "date": "5月15日"})

    assert rendered == [
        v2(
            "{talent} さん、5月15日 は撮影です",
            talent={"type": "mention", "mentionee": {"type": "user", "userId": TALENT}},
        )
    ]
    assert spec_errors(push_body(to=GROUP_ID, messages=rendered)) == []


def test_a_variable_that_brings_braces_into_the_text_is_refused_before_sending():
    template = [v2("{everyone} 「{{ title }}」の撮影です", everyone=EVERYONE)]

    with pytest.raises(RenderError) as refused:
        render_messages(messages=template, variables={"title": "{新作}"})

    assert "text の {新作} に対応する substitution がありません" in str(refused.value)

"""LINE's text message (v2), `textV2`: text with `{key}` placeholders that a `substitution`
map turns into a mention (of one user, or of everyone in the group) or a LINE emoji.

Shapes: messaging-api.yml `TextMessageV2`, `SubstitutionObject`, `MentionSubstitutionObject`
(`mentionee`: `UserMentionTarget` with `userId`, or `AllMentionTarget`),
`EmojiSubstitutionObject` (`productId`, `emojiId`);
https://developers.line.biz/en/reference/messaging-api/#text-message-v2. A `userId` may
be a `{{ variable }}` of the template: its value is LINE's to judge at validate time.
"""

from __future__ import annotations

import re

# A placeholder of the text: `{key}`. LINE's rule for the characters of a key is not in
# the spec (UNCONFIRMED); a key is what lies between single braces.
KEY = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")
SUBSTITUTION_TYPES = ("mention", "emoji")
MENTIONEE_TYPES = ("user", "all")


def substitution_problems(message: dict) -> list[str]:
    """What is wrong with a textV2 message's `substitution` and the keys of its text."""
    substitution = message.get("substitution", {})
    if not isinstance(substitution, dict):
        return ["substitution は {キー: 置き換え} のオブジェクトである必要があります。"]
    text = message.get("text") if isinstance(message.get("text"), str) else ""
    problems = [
        f"text の {{{key}}} に対応する substitution がありません（mention か emoji を指定してください）。"
        for key in dict.fromkeys(KEY.findall(text))
        if key not in substitution
    ]
    for key, value in substitution.items():
        problems += [f"substitution「{key}」: {problem}" for problem in _one(value)]
    return problems


def _one(value: object) -> list[str]:
    if not isinstance(value, dict) or value.get("type") not in SUBSTITUTION_TYPES:
        return [f"type は {' か '.join(SUBSTITUTION_TYPES)} のオブジェクトである必要があります。"]
    if value["type"] == "emoji":
        return [f"{name} がありません。" for name in ("productId", "emojiId") if not _text(value.get(name))]
    mentionee = value.get("mentionee")
    if not isinstance(mentionee, dict) or mentionee.get("type") not in MENTIONEE_TYPES:
        return [
            "mentionee は type が user（userId で一人）か all（全員）のオブジェクトである必要があります。"
        ]
    if mentionee["type"] == "user" and not _text(mentionee.get("userId")):
        return ["mentionee の userId がありません。"]
    return []


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())

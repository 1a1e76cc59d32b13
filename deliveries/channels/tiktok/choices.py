"""TikTok's posting choices (公開範囲, コメント, デュエット, スティッチ, 商用コンテンツ, 音楽利用確認):
the one home of their rules, used by the approval-time check, the preview and the init request.

TikTok's Direct Post guidelines leave every choice to the person posting, none made for
them and no interaction on by default
(https://developers.tiktok.com/doc/content-sharing-guidelines/), so the issue body states
each one and automedia picks no default.
"""

from __future__ import annotations

from django.conf import settings

from backlog_bridge.body.sections import SECTION_META
from backlog_bridge.body.tiktok import (
    AGREED,
    ALLOWED,
    DENIED,
    KEY_COMMENT,
    KEY_COMMERCIAL,
    KEY_DUET,
    KEY_MUSIC,
    KEY_PRIVACY,
    KEY_STITCH,
    PRIVACY_LEVELS,
)

# The guidelines ask for this consent before the post. The API has no field for it, so
# 音楽利用確認: 同意 is checked here and sent nowhere. The wording is quoted from a third-party
# copy of the page (https://githubissues.com/inovector/mixpost/74): the official page read
# stops before it.
MUSIC_CONFIRMATION = "By posting, you agree to TikTok's Music Usage Confirmation"
_MUSIC_WHY = (
    f"TikTok の規約により、投稿する人が投稿前に TikTok の音楽利用確認（{MUSIC_CONFIRMATION}）に"
    f"同意したことを明示します。内容を確認して「{AGREED}」と書いてください。"
)

# A photo post has no duet or stitch: its `post_info` has `disable_comment` only
# (https://developers.tiktok.com/doc/content-posting-api-reference-photo-post).
NEEDED = {
    "video": (
        (KEY_PRIVACY, "privacy_level"),
        (KEY_COMMENT, "comment"),
        (KEY_DUET, "duet"),
        (KEY_STITCH, "stitch"),
        (KEY_COMMERCIAL, "commercial"),
        (KEY_MUSIC, "music_usage"),
    ),
    "photo": (
        (KEY_PRIVACY, "privacy_level"),
        (KEY_COMMENT, "comment"),
        (KEY_COMMERCIAL, "commercial"),
        (KEY_MUSIC, "music_usage"),
    ),
}
EXAMPLES = {
    KEY_PRIVACY: "SELF_ONLY",
    KEY_COMMENT: DENIED,
    KEY_DUET: DENIED,
    KEY_STITCH: DENIED,
    KEY_COMMERCIAL: "なし",
    KEY_MUSIC: AGREED,
}
# An interaction the creator turned off in TikTok (`creator_info`) cannot be allowed.
CREATOR_OFF = {
    "comment": (KEY_COMMENT, "comment_disabled"),
    "duet": (KEY_DUET, "duet_disabled"),
    "stitch": (KEY_STITCH, "stitch_disabled"),
}


def missing_choices(choices: dict, kind: str) -> list[str]:
    """Every choice the post needs that the body does not state, each with an example line."""
    missing = [key for key, name in NEEDED.get(kind, NEEDED["video"]) if name not in choices]
    return [
        f"TikTok の投稿には「## {SECTION_META}」の {key} が必要です（例: - {key}: {EXAMPLES[key]}）。"
        + (_MUSIC_WHY if key == KEY_MUSIC else "TikTok の規約により automedia は既定値を選びません。")
        for key in missing
    ]


def unused_choices(choices: dict, kind: str) -> list[str]:
    """Choices that do not exist for this kind of post (a photo has no duet or stitch)."""
    names = {name for _, name in NEEDED.get(kind, NEEDED["video"])}
    keys = {"duet": KEY_DUET, "stitch": KEY_STITCH}
    return [keys[name] for name in ("duet", "stitch") if name in choices and name not in names]


def creator_problems(choices: dict, info: dict) -> list[str]:
    """What `creator_info` does not allow of the stated choices: a privacy level not among its
    options (https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info/),
    an interaction the creator turned off; and, when TIKTOK_REFUSE_PRIVATE_BRANDED is on,
    branded content posted privately."""
    problems = []
    options = [str(o) for o in info.get("privacy_level_options") or []]
    level = choices.get("privacy_level")
    if level is not None and level not in options:
        problems.append(
            f"{KEY_PRIVACY}「{level}」はこのクリエイター（{creator_name(info)}）では使えません"
            f"（使えるのは {levels_text(options)}）。審査前の TikTok アプリでは SELF_ONLY しか使えません。"
        )
    for name, (key, flag) in CREATOR_OFF.items():
        if choices.get(name) is True and info.get(flag) is True:
            problems.append(
                f"{key}「{ALLOWED}」はできません: クリエイター（{creator_name(info)}）が TikTok で{key}をオフにしています。"
                f"「{DENIED}」にしてください。"
            )
    # That branded content cannot be private comes from third parties only
    # (https://docs.rs/crate/zernio/latest/source/src/models/tik_tok_platform_data.rs); TikTok's
    # guidelines as read (https://developers.tiktok.com/doc/content-sharing-guidelines/) stop
    # before it. So TikTok's answer to the init decides, unless the setting asks for the check.
    if (
        settings.TIKTOK_REFUSE_PRIVATE_BRANDED
        and choices.get("commercial") == "brand"
        and level == "SELF_ONLY"
    ):
        problems.append(
            f"{KEY_COMMERCIAL}「ブランド」（ブランドコンテンツ）は {KEY_PRIVACY}「SELF_ONLY」では投稿できません。"
        )
    return problems


def post_info(content: dict, choices: dict) -> dict:
    """The init request's `post_info`: the template's text fields and exactly the stated choices."""
    kind = content["type"]
    text_keys = (
        ("title", "video_cover_timestamp_ms")
        if kind == "video"
        else ("title", "description", "auto_add_music")
    )
    info = {key: content[key] for key in text_keys if key in content}
    info["privacy_level"] = choices["privacy_level"]
    info["disable_comment"] = not choices["comment"]
    if kind == "video":
        info["disable_duet"] = not choices["duet"]
        info["disable_stitch"] = not choices["stitch"]
    # The commercial content disclosure: your own brand, or a paid partnership with another
    # brand; both false for none.
    info["brand_organic_toggle"] = choices["commercial"] == "own"
    info["brand_content_toggle"] = choices["commercial"] == "brand"
    return info


def creator_name(info: dict) -> str:
    nickname, username = info.get("creator_nickname") or "", info.get("creator_username") or ""
    return f"{nickname}（@{username}）" if nickname else f"@{username or '?'}"


def levels_text(options: list[str]) -> str:
    return " / ".join(f"{o}（{PRIVACY_LEVELS.get(o, '不明')}）" for o in options) or "なし"


def creator_line(info: dict) -> str:
    """`TikTok クリエイター: デモ（@automedia_demo）、使える公開範囲: SELF_ONLY（自分のみ）`"""
    return (
        f"TikTok クリエイター: {creator_name(info)}、"
        f"使える公開範囲: {levels_text([str(o) for o in info.get('privacy_level_options') or []])}"
    )


def choices_text(choices: dict) -> str:
    """The stated choices for people: `公開範囲 SELF_ONLY（自分のみ）、コメント 不可、…`."""
    parts = []
    if "privacy_level" in choices:
        level = choices["privacy_level"]
        parts.append(f"{KEY_PRIVACY} {level}（{PRIVACY_LEVELS.get(level, '不明')}）")
    for name, (key, _) in CREATOR_OFF.items():
        if name in choices:
            parts.append(f"{key} {ALLOWED if choices[name] else DENIED}")
    if "commercial" in choices:
        words = {"none": "なし", "own": "自社", "brand": "ブランド"}
        parts.append(f"{KEY_COMMERCIAL} {words[choices['commercial']]}")
    if choices.get("music_usage"):
        parts.append(f"{KEY_MUSIC} {AGREED}")
    return "、".join(parts)

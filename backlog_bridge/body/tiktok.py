"""TikTok's posting choices in `## 配信メタ`: 公開範囲, コメント, デュエット, スティッチ, 商用コンテンツ,
音楽利用確認.

TikTok's Direct Post guidelines leave each of these to the person posting: no privacy level
chosen in advance, interactions not turned on by default, the commercial content disclosure
answered, and the person's consent to TikTok's Music Usage Confirmation given before the post
(https://developers.tiktok.com/doc/content-sharing-guidelines/). So the issue body
states them, and nothing else does. What is written is read here; whether every one is
there for the post, and whether the creator allows it, is the approval's check
(deliveries/channels/tiktok/choices.py).
"""

from __future__ import annotations

import unicodedata

from backlog_bridge.body.sections import SECTION_META, TIKTOK_CHOICE_KEYS, Item

KEY_PRIVACY, KEY_COMMENT, KEY_DUET, KEY_STITCH, KEY_COMMERCIAL, KEY_MUSIC = TIKTOK_CHOICE_KEYS

# TikTok's `privacy_level` values (creator_info's `privacy_level_options`), and the names the
# TikTok app shows for them, which a manager may write instead.
PRIVACY_LEVELS = {
    "PUBLIC_TO_EVERYONE": "全員",
    "MUTUAL_FOLLOW_FRIENDS": "友達（相互フォロー）",
    "FOLLOWER_OF_CREATOR": "フォロワー",
    "SELF_ONLY": "自分のみ",
}
_PRIVACY_NAMES = {
    "全員": "PUBLIC_TO_EVERYONE",
    "友達": "MUTUAL_FOLLOW_FRIENDS",
    "フォロワー": "FOLLOWER_OF_CREATOR",
}
_PRIVACY_NAMES |= {"友達(相互フォロー)": "MUTUAL_FOLLOW_FRIENDS", "自分のみ": "SELF_ONLY"}
INTERACTIONS = {KEY_COMMENT: "comment", KEY_DUET: "duet", KEY_STITCH: "stitch"}
ALLOWED, DENIED = "許可", "不可"
# 商用コンテンツ: none, your own brand (TikTok's "Your brand", brand_organic_toggle), or
# another brand's paid partnership ("Branded content", brand_content_toggle).
COMMERCIAL = {"なし": "none", "自社": "own", "ブランド": "brand"}
# 音楽利用確認: the one answer that lets a post go out. Not agreeing is not a choice TikTok
# offers: such a post is not made at all.
AGREED = "同意"


def meta_tiktok(items: dict[str, Item], channel: str | None, errors: list[str]) -> dict:
    """The choices written, in TikTok's terms: `privacy_level`, `comment` / `duet` / `stitch`
    (True = 許可), `commercial` (none / own / brand), `music_usage` (True = 同意). A choice
    not written is absent."""
    given = {key: items[key] for key in TIKTOK_CHOICE_KEYS if key in items}
    if given and channel is not None and channel != "tiktok":
        errors.append(
            f"{'・'.join(given)} は TikTok の投稿でだけ使えます（チャネル: {channel}）。"
            f"「## {SECTION_META}」から消してください。"
        )
        return {}
    choices: dict = {}
    if KEY_PRIVACY in given:
        level = _privacy(given[KEY_PRIVACY].value)
        if level is None:
            errors.append(
                f"{KEY_PRIVACY}「{given[KEY_PRIVACY].value}」は使えません"
                f"（{' / '.join(PRIVACY_LEVELS)} のどれか、例: - {KEY_PRIVACY}: SELF_ONLY）。"
            )
        else:
            choices["privacy_level"] = level
    for key, name in INTERACTIONS.items():
        if key in given:
            value = _word(given[key].value)
            if value not in (ALLOWED, DENIED):
                errors.append(f"{key}「{given[key].value}」は「{ALLOWED}」か「{DENIED}」で書いてください。")
            else:
                choices[name] = value == ALLOWED
    if KEY_COMMERCIAL in given:
        value = COMMERCIAL.get(_word(given[KEY_COMMERCIAL].value))
        if value is None:
            errors.append(
                f"{KEY_COMMERCIAL}「{given[KEY_COMMERCIAL].value}」は使えません"
                f"（{' / '.join(COMMERCIAL)} のどれか）。"
            )
        else:
            choices["commercial"] = value
    if KEY_MUSIC in given:
        if _word(given[KEY_MUSIC].value) != AGREED:
            errors.append(
                f"{KEY_MUSIC}「{given[KEY_MUSIC].value}」は「{AGREED}」とだけ書けます"
                "（TikTok の Music Usage Confirmation に同意しない投稿は TikTok に出せません）。"
            )
        else:
            choices["music_usage"] = True
    return choices


def _word(value: str) -> str:
    return unicodedata.normalize("NFKC", value).strip()


def _privacy(value: str) -> str | None:
    word = _word(value)
    level = word.upper().replace("-", "_").replace(" ", "_")
    if level in PRIVACY_LEVELS:
        return level
    return _PRIVACY_NAMES.get(word.replace(" ", ""))

"""The shape of a description: `## ` headings, `- key: value` lines, and the names of the
sections and of the 配信メタ items."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

SECTION_META = "配信メタ"
SECTION_VARIABLES = "文面/変数"
SECTION_ATTACHMENTS = "添付"

KEY_CHANNEL = "チャネル"
KEY_PUBLISH_AT = "投稿日時"
KEY_AUDIENCE = "対象タグ"
KEY_TEMPLATE = "テンプレ"
META_KEYS = (KEY_CHANNEL, KEY_PUBLISH_AT, KEY_AUDIENCE, KEY_TEMPLATE)
# Optional: the LINE group told about the task (linepush's task_approved / reminder posts),
# and TikTok's posting choices (backlog_bridge/body/tiktok.py), which a TikTok post needs.
KEY_CONTACT_GROUP = "連絡グループ"
TIKTOK_CHOICE_KEYS = ("公開範囲", "コメント", "デュエット", "スティッチ", "商用コンテンツ", "音楽利用確認")
OPTIONAL_META_KEYS = (KEY_CONTACT_GROUP, *TIKTOK_CHOICE_KEYS)
# Spellings managers actually use for the same items.
META_ALIASES = {"チャンネル": KEY_CHANNEL, "テンプレート": KEY_TEMPLATE}

NOTHING = ("なし", "無し", "ナシ")

_HEADING = re.compile(r" {0,3}##(?!#)[ \t\u3000]*(?P<title>.*?)[ \t\u3000#]*")
ITEM = re.compile(r"\s*[-*+・]\s*(?P<key>[^:：]+?)\s*[:：]\s*(?P<value>.*?)\s*")


@dataclass
class Line:
    number: int
    text: str


@dataclass
class Section:
    title: str
    number: int
    lines: list[Line] = field(default_factory=list)


@dataclass
class Item:
    number: int
    value: str


def lines_of(description: str | None) -> list[str]:
    text = str(description or "").removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def split_sections(lines: list[str]) -> list[Section]:
    sections = [Section(title="", number=0)]
    for number, text in enumerate(lines, start=1):
        heading = _HEADING.fullmatch(text)
        if heading:
            sections.append(Section(title=_section_key(heading["title"]), number=number))
        else:
            sections[-1].lines.append(Line(number, text))
    return sections


def _section_key(title: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", title))


def find_section(sections: list[Section], title: str, errors: list[str]) -> Section | None:
    found = [section for section in sections if section.number and section.title == title]
    if len(found) > 1:
        where = "、".join(f"{section.number} 行目" for section in found)
        errors.append(
            f"見出し「## {show_title(title)}」が {len(found)} 回あります（{where}）。1 つにまとめてください。"
        )
    return found[0] if found else None


def show_title(title: str) -> str:
    return "文面 / 変数" if title == SECTION_VARIABLES else title


def missing_meta_message(sections: list[Section]) -> str:
    message = (
        f"本文に見出し「## {SECTION_META}」がありません。"
        f"{'・'.join(META_KEYS)}はこの見出しの下に「- 項目: 値」の形で書いてください。"
    )
    lookalike = next(
        (line for section in sections for line in section.lines if SECTION_META in line.text), None
    )
    if lookalike is not None:
        message += (
            f"（{lookalike.number} 行目「{lookalike.text.strip()}」は見出しとして読めません。"
            "行頭を「## 」にしてください）"
        )
    return message


def section_items(section: Section, errors: list[str], shape: str) -> list[tuple[str, Item]]:
    pairs = []
    for line in section.lines:
        if not line.text.strip():
            continue
        match = ITEM.fullmatch(line.text)
        if match is None:
            errors.append(
                f"「## {show_title(section.title)}」の {line.number} 行目「{line.text.strip()}」は"
                f"「{shape}」の形ではありません。"
            )
            continue
        pairs.append((match["key"], Item(line.number, match["value"])))
    return pairs


def meta_key(raw: str) -> str:
    key = re.sub(r"\s+", "", unicodedata.normalize("NFKC", raw))
    return META_ALIASES.get(key, key)


def missing_item(key: str, example: str) -> str:
    return f"「## {SECTION_META}」に {key} がありません（例: - {key}: {example}）。"

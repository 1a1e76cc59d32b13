"""`## 文面 / 変数` (template variables, values may continue on indented lines) and `## 添付`."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from backlog_bridge.body.sections import (
    ITEM,
    NOTHING,
    SECTION_ATTACHMENTS,
    SECTION_VARIABLES,
    Line,
    Section,
    section_items,
    show_title,
)
from backlog_bridge.body.task import Attachment

_CONTINUATION = re.compile(r"(?: {2,}|\t|\u3000)\s*\S.*")
_VARIABLE_KEY = re.compile(r"[\w.\-]+")


@dataclass
class _Draft:
    key: str
    number: int
    first: str
    more: list[str] = field(default_factory=list)

    def value(self) -> str:
        rest = textwrap.dedent("\n".join(line.rstrip() for line in self.more))
        return "\n".join([self.first, rest] if self.more else [self.first]).strip()


def content_variables(section: Section | None, errors: list[str]) -> dict[str, str]:
    if section is None:
        return {}
    drafts: list[_Draft] = []
    current: _Draft | None = None
    for line in section.lines:
        if current is not None and (_CONTINUATION.fullmatch(line.text) or not line.text.strip()):
            current.more.append(line.text)
        elif line.text.strip():
            draft = _variable_draft(line, errors)
            drafts.extend([draft] if draft else [])
            # A rejected line keeps its indented continuation, so that is not reported again.
            current = draft or _Draft(key="", number=line.number, first="")
    return _collect_variables(drafts, errors)


def _variable_draft(line: Line, errors: list[str]) -> _Draft | None:
    match = ITEM.fullmatch(line.text)
    title = show_title(SECTION_VARIABLES)
    if match is None:
        errors.append(
            f"「## {title}」の {line.number} 行目「{line.text.strip()}」は"
            "「- キー: 値」の形ではありません"
            "（値の続きの行は 2 文字以上字下げしてください）。"
        )
        return None
    if not _VARIABLE_KEY.fullmatch(match["key"]):
        errors.append(
            f"「## {title}」の {line.number} 行目の変数名「{match['key']}」は使えません"
            "（英数字・日本語・_ - . のみ、空白不可）。"
        )
        return None
    return _Draft(key=match["key"], number=line.number, first=match["value"])


def _collect_variables(drafts: list[_Draft], errors: list[str]) -> dict[str, str]:
    variables: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    for draft in drafts:
        if draft.key in variables:
            errors.append(
                f"変数「{draft.key}」が 2 回あります（{first_seen[draft.key]} 行目と {draft.number} 行目）。"
            )
            continue
        variables[draft.key] = draft.value()
        first_seen[draft.key] = draft.number
    return variables


def content_attachments(section: Section | None, errors: list[str]) -> list[Attachment]:
    if section is None:
        return []
    attachments = []
    for kind, item in section_items(section, errors, "- 種類: ファイル名かURL"):
        if item.value.startswith("//"):
            errors.append(
                f"「## {SECTION_ATTACHMENTS}」の {item.number} 行目に種類がありません（例: - 画像: https://…）。"
            )
        elif item.value and item.value not in NOTHING:
            attachments.append(Attachment(kind=kind, value=item.value))
    return attachments

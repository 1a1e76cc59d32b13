"""The items of `## 配信メタ` (チャネル, 対象タグ, テンプレ, 連絡グループ); 投稿日時 is publish_at's."""

from __future__ import annotations

import re
import unicodedata

from backlog_bridge.audience import AudienceError, parse_audience
from backlog_bridge.body.sections import (
    KEY_AUDIENCE,
    KEY_CHANNEL,
    KEY_CONTACT_GROUP,
    KEY_TEMPLATE,
    META_KEYS,
    NOTHING,
    OPTIONAL_META_KEYS,
    SECTION_META,
    Item,
    Section,
    meta_key,
    missing_item,
    section_items,
)
from backlog_bridge.body.task import TemplateRef
from core.channels import CHANNELS

_LINE_GROUP_ID = re.compile(r"[CR][0-9A-Za-z_\-]{1,64}")


def meta_items(meta: Section | None, errors: list[str]) -> dict[str, Item]:
    if meta is None:
        return {}
    items: dict[str, Item] = {}
    for raw_key, item in section_items(meta, errors, "- 項目: 値"):
        key = meta_key(raw_key)
        if key not in META_KEYS + OPTIONAL_META_KEYS:
            errors.append(
                f"「## {SECTION_META}」の {item.number} 行目の項目「{raw_key}」は使えません"
                f"（使える項目: {'、'.join(META_KEYS)}）。"
            )
        elif key in items:
            errors.append(
                f"「## {SECTION_META}」に {key} が 2 回あります"
                f"（{items[key].number} 行目と {item.number} 行目）。"
            )
        else:
            items[key] = item
    return items


def meta_channel(items: dict[str, Item], has_meta: bool, errors: list[str]) -> str | None:
    item = items.get(KEY_CHANNEL)
    accepted = " / ".join(channel.label for channel in CHANNELS.values())
    if item is None or not item.value:
        if has_meta:
            errors.append(
                missing_item(KEY_CHANNEL, "LINE")
                if item is None
                else f"チャネル が空です（{accepted} のいずれか）。"
            )
        return None
    channel = unicodedata.normalize("NFKC", item.value).strip().lower()
    if channel not in CHANNELS:
        errors.append(
            f"チャネル「{item.value}」には対応していません（{accepted} のいずれかを書いてください）。"
        )
        return None
    return channel


def meta_contact_group(item: Item | None, errors: list[str]) -> str:
    value = unicodedata.normalize("NFKC", item.value).strip() if item else ""
    if not value or value in NOTHING:
        return ""
    if not _LINE_GROUP_ID.fullmatch(value):
        errors.append(
            f"{KEY_CONTACT_GROUP}「{item.value}」は LINE のグループID ではありません"
            "（C で始まる ID、例: - 連絡グループ: C4af4980629…）。"
        )
        return ""
    return value


def meta_template(item: Item | None, has_meta: bool, errors: list[str]) -> TemplateRef | None:
    if item is None:
        if has_meta:
            errors.append(missing_item(KEY_TEMPLATE, "announce_open@3f2a9c1"))
        return None
    try:
        return TemplateRef.parse(item.value)
    except ValueError as exc:
        errors.append(str(exc))
        return None


def meta_audience(item: Item | None, channel: str | None, errors: list[str]) -> str:
    text = item.value if item else ""
    kind = CHANNELS.get(channel)
    if not text:
        if kind and kind.audience:
            errors.append(
                f"チャネルが {kind.label} のときは {KEY_AUDIENCE} が必要です"
                "（例: - 対象タグ: tag:active, !tag:opt_out）。"
            )
        return text
    try:
        audience = parse_audience(text)
    except AudienceError as exc:
        errors.append(f"{KEY_AUDIENCE}「{text}」が不正です: {exc}")
        return text
    if audience.groups and kind and not kind.groups:
        errors.append(f"{KEY_AUDIENCE} の group: 指定は LINE でしか使えません（チャネル: {kind.label}）。")
    return text

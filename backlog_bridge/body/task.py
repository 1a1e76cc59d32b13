"""What a parsed issue is: the task, its template reference and its attachments."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

from core.timeutil import JST

_TEMPLATE_NAME = re.compile(r"[\w.\-/]+")
_TEMPLATE_REV = re.compile(r"[0-9A-Za-z._\-]+")


@dataclass(frozen=True)
class TemplateRef:
    name: str
    rev: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.rev}" if self.rev else self.name

    @classmethod
    def parse(cls, text: str) -> TemplateRef:
        source = unicodedata.normalize("NFKC", str(text or "")).strip()
        if not source:
            raise ValueError("テンプレが空です（例: announce_open@3f2a9c1、最新版なら announce_open）。")
        name, at, rev = source.partition("@")
        if problem := _template_problem(source, name, at, rev):
            raise ValueError(problem)
        return cls(name=name, rev=rev or None)


def _template_problem(source: str, name: str, at: str, rev: str) -> str | None:
    if "@" in rev:
        return f"テンプレ「{source}」に @ が 2 つ以上あります（名前@リビジョン の形で書いてください）。"
    if not name:
        return f"テンプレ「{source}」にテンプレ名がありません（例: announce_open@3f2a9c1）。"
    if not _TEMPLATE_NAME.fullmatch(name):
        return (
            f"テンプレ「{source}」のテンプレ名「{name}」に使えない文字があります"
            "（英数字・日本語・_ - . / のみ、空白不可）。"
        )
    if at and not rev:
        return (
            f"テンプレ「{source}」の @ の後にリビジョンがありません"
            "（最新版を使うなら @ ごと消してください）。"
        )
    if at and not _TEMPLATE_REV.fullmatch(rev):
        return (
            f"テンプレ「{source}」のリビジョン「{rev}」に使えない文字があります"
            "（英数字・_ - . のみ、例: 3f2a9c1）。"
        )
    return None


@dataclass(frozen=True)
class Attachment:
    kind: str
    value: str


@dataclass
class ParsedTask:
    channel: str | None = None
    publish_at: datetime | None = None
    publish_at_source: str = ""
    audience: str = ""
    template: TemplateRef | None = None
    variables: dict[str, str] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    contact_group: str = ""
    # TikTok's posting choices as written (backlog_bridge/body/tiktok.py); empty for other channels.
    tiktok: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict:
        return {
            "channel": self.channel,
            "publish_at": self.publish_at.astimezone(JST).isoformat() if self.publish_at else None,
            "publish_at_source": self.publish_at_source,
            "audience": self.audience,
            "template": str(self.template) if self.template else None,
            "variables": dict(self.variables),
            "attachments": [{"kind": a.kind, "value": a.value} for a in self.attachments],
            "errors": list(self.errors),
            "contact_group": self.contact_group,
            "tiktok": dict(self.tiktok),
        }

    @classmethod
    def from_json(cls, data: dict) -> ParsedTask:
        publish_at = data.get("publish_at")
        template = data.get("template")
        return cls(
            channel=data.get("channel"),
            publish_at=datetime.fromisoformat(publish_at).astimezone(JST) if publish_at else None,
            publish_at_source=data.get("publish_at_source", ""),
            audience=data.get("audience", ""),
            template=TemplateRef.parse(template) if template else None,
            variables=dict(data.get("variables") or {}),
            attachments=[Attachment(a["kind"], a["value"]) for a in data.get("attachments") or []],
            errors=list(data.get("errors") or []),
            contact_group=data.get("contact_group") or "",
            tiktok=dict(data.get("tiktok") or {}),
        )

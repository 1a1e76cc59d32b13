"""Instagram / TikTok / HubSpot helpers shared by the channel, command and preview tests:
the fakes' tokens, a template and an issue body for each channel, and an approval of one.

Their fixtures (the three fakes on loopback, a channel account each, `approve_channel`) are
in tests/conftest.py.
"""

from __future__ import annotations

from datetime import datetime

from core.channels import channel_label
from core.timeutil import JST
from deliveries.models import MessageTemplate
from tests.helpers.deliveries import issue_approve

APPROVED_AT = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
IG_TOKEN = "ig-long-lived-token"
TT_TOKEN = "tt-access-token"
TT_REFRESH = "tt-refresh-token"
HS_TOKEN = "pat-na1-hubspot-token"

TEMPLATES = {
    "instagram": {
        "type": "image",
        "caption": "{{ date }} 新作公開！",
        "image_url": "https://cdn.example.jp/{{ image }}",
    },
    "tiktok": {
        "type": "video",
        "title": "{{ date }} の新作",
        "video_url": "https://cdn.example.jp/{{ video }}",
    },
    "hubspot": {"type": "note", "body": "<p>{{ date }} 新作を配信しました</p>"},
}
VARIABLES = {"date": "2026-12-10", "image": "new.jpg", "video": "new.mp4"}


# TikTok's posting choices in 配信メタ (a TikTok body states every one).
TIKTOK_CHOICES = {
    "公開範囲": "SELF_ONLY",
    "コメント": "不可",
    "デュエット": "不可",
    "スティッチ": "不可",
    "商用コンテンツ": "なし",
    "音楽利用確認": "同意",
}


def channel_body(
    channel: str,
    *,
    template: str = "post",
    audience: str = "tag:active, !tag:opt_out",
    tiktok: dict[str, str] | None = None,
) -> str:
    """`tiktok`: TikTok's choices over TIKTOK_CHOICES (a value of None leaves the line out)."""
    choices = {**TIKTOK_CHOICES, **(tiktok or {})} if channel == "tiktok" else {}
    return (
        "## 配信メタ\n"
        f"- チャネル: {channel_label(channel)}\n"
        "- 投稿日時: 2026-12-10 10:00 (JST)\n"
        f"- 対象タグ: {audience}\n"
        f"- テンプレ: {template}\n"
        + "".join(f"- {k}: {v}\n" for k, v in choices.items() if v is not None)
        + "\n## 文面 / 変数\n"
        + "".join(f"- {k}: {v}\n" for k, v in VARIABLES.items())
    )


def channel_template(channel: str, content: dict | None = None, *, name: str = "post", rev: str = "r1"):
    return MessageTemplate.objects.create(
        name=name, rev=rev, channel=channel, messages=content or TEMPLATES[channel]
    )


def channel_approve(
    fake_backlog, pump, tenant, channel: str, *, body: str | None = None, content: dict | None = None
) -> str:
    """An issue of `channel` with its template (`content`), approved on 2026-12-01 09:00 JST;
    its key, whether the approval's checks registered it or refused it."""
    channel_template(channel, content)
    return issue_approve(
        fake_backlog, pump, tenant, summary="新作告知", description=body or channel_body(channel)
    )

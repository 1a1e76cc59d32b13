"""The fake Instagram, TikTok and HubSpot of `make run`'s sandbox, wired to the demo tenants.

`python -m sandbox` (sandbox/demo.py) starts them next to the fake Backlog and fake LINE: each accepts the
tokens of the tenants' channel accounts (manage.py seed_demo creates them), HubSpot gets a
few tagged demo contacts, and every tenant with an account gets a demo issue per channel.
What the fakes publish is printed, like the LINE messages.
"""

from __future__ import annotations

from datetime import datetime
from typing import TextIO
from urllib.parse import urlsplit

from core.models import Tenant
from core.timeutil import JST
from deliveries.channels.models import ChannelAccount
from sandbox.backlog import FakeBacklog
from sandbox.fakeserver import RecordedRequest
from sandbox.hubspot import FakeHubSpot
from sandbox.instagram import FakeInstagram
from sandbox.tiktok import FakeTikTok

DEMO_CONTACTS = [
    ("fan1@example.jp", ["active"]),
    ("fan2@example.jp", ["active", "vip"]),
    ("fan3@example.jp", ["active", "opt_out"]),
]
DEMO_BODIES = {
    "instagram": ("Instagram", "new_release", "- image_url: https://picsum.photos/id/237/1080/1080.jpg\n"),
    "tiktok": ("TikTok", "new_release", "- video_url: https://sandbox.example.jp/demo.mp4\n"),
    "hubspot": ("HubSpot", "new_release_note", ""),
}


# TikTok's posting choices are the body's, never a default (the demo creator is unaudited).
TIKTOK_DEMO_CHOICES = "- 公開範囲: SELF_ONLY\n- コメント: 不可\n- デュエット: 不可\n- スティッチ: 不可\n- 商用コンテンツ: なし\n- 音楽利用確認: 同意\n"


def demo_body(channel: str, publish_at: datetime) -> str:
    label, template, extra = DEMO_BODIES[channel]
    local = publish_at.astimezone(JST)
    return (
        "## 配信メタ\n"
        f"- チャネル: {label}\n"
        f"- 投稿日時: {local:%Y-%m-%d %H:%M} (JST)\n"
        "- 対象タグ: tag:active, !tag:opt_out\n"
        f"- テンプレ: {template}\n"
        + (TIKTOK_DEMO_CHOICES if channel == "tiktok" else "")
        + "\n## 文面 / 変数\n"
        f"- date: {local:%Y-%m-%d}\n"
        "- title: デモ新作\n" + extra
    )


class SandboxPlatforms:
    def __init__(self, *, instagram_url: str, tiktok_url: str, hubspot_url: str) -> None:
        self.instagram = FakeInstagram(**_address(instagram_url))
        self.tiktok = FakeTikTok(**_address(tiktok_url))
        self.hubspot = FakeHubSpot(**_address(hubspot_url))
        self._shown = 0

    def __enter__(self) -> SandboxPlatforms:
        for fake in (self.instagram, self.tiktok, self.hubspot):
            fake.start()
        for email, tags in DEMO_CONTACTS:
            self.hubspot.add_contact(email, tags)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for fake in (self.instagram, self.tiktok, self.hubspot):
            fake.stop()

    def urls(self) -> str:
        return f"Instagram {self.instagram.base_url}、TikTok {self.tiktok.base_url}、HubSpot {self.hubspot.base_url}"

    def accept(self, tenant: Tenant) -> None:
        """The fakes know the tenant's accounts: its Instagram user and TikTok creator."""
        for account in ChannelAccount.objects.filter(tenant=tenant):
            if account.channel == ChannelAccount.Channel.INSTAGRAM:
                self.instagram.ig_user_id = account.ig_user_id
            if account.channel == ChannelAccount.Channel.TIKTOK:
                self.tiktok.add_account(
                    account.open_id, access_token=account.access_token, refresh_token=account.refresh_token
                )

    def wire(self, backlog: FakeBacklog, tenant: Tenant, publish_at: datetime) -> list[str]:
        """A demo issue per channel account of the tenant (accepted first); returns the keys."""
        keys = []
        for account in ChannelAccount.objects.filter(tenant=tenant).order_by("channel"):
            body = demo_body(account.channel, publish_at)
            summary = f"【デモ】{DEMO_BODIES[account.channel][0]} 新作告知"
            issue = backlog.create_issue(
                tenant.backlog_project_key, summary=summary, description=body, status="処理中"
            )
            keys.append(f"{issue['issueKey']}（{DEMO_BODIES[account.channel][0]}）")
        return keys

    def show_new(self, out: TextIO) -> None:
        """Print every publishing request the fakes accepted since the last call."""
        calls = sorted(
            (r for fake in (self.instagram, self.tiktok, self.hubspot) for r in fake.calls() if r.effect),
            key=lambda r: r.received_at,
        )
        for request in calls[self._shown :]:
            out.write(
                f"{_service(request.path)} が受信: {request.method} {request.path} {_summary(request)}\n"
            )
        if len(calls) > self._shown:
            out.flush()
        self._shown = len(calls)


def _address(url: str) -> dict:
    parts = urlsplit(url)
    return {"host": parts.hostname or "127.0.0.1", "port": parts.port or 0}


def _service(path: str) -> str:
    if path.startswith("/v2/"):
        return "TikTok"
    if path.startswith(("/crm/", "/marketing/")):
        return "HubSpot"
    return "Instagram"


def _summary(request: RecordedRequest) -> str:
    if "token" in request.path:  # token refreshes carry secrets: never print them
        return "（トークン更新）"
    text = str(request.body or "")
    return text if len(text) <= 200 else text[:200] + "…"

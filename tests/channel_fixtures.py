"""Instagram / TikTok / HubSpot fixtures shared by the channel, command and preview tests (a
pytest plugin): the three fakes on loopback, a channel account each, a template each, and an
approved issue for a channel."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core.timeutil import JST
from deliveries.models import ChannelAccount, MessageTemplate
from sandbox.hubspot import FakeHubSpot
from sandbox.instagram import FakeInstagram
from sandbox.tiktok import FakeTikTok
from tests.delivery_fixtures import approve_issue

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
        "privacy_level": "SELF_ONLY",
    },
    "hubspot": {"type": "note", "body": "<p>{{ date }} 新作を配信しました</p>"},
}
VARIABLES = {"date": "2026-12-10", "image": "new.jpg", "video": "new.mp4"}


def channel_body(channel: str, *, template: str = "post", audience: str = "tag:active, !tag:opt_out") -> str:
    labels = {"instagram": "Instagram", "tiktok": "TikTok", "hubspot": "HubSpot"}
    return (
        "## 配信メタ\n"
        f"- チャネル: {labels[channel]}\n"
        "- 投稿日時: 2026-12-10 10:00 (JST)\n"
        f"- 対象タグ: {audience}\n"
        f"- テンプレ: {template}\n"
        "\n## 文面 / 変数\n" + "".join(f"- {k}: {v}\n" for k, v in VARIABLES.items())
    )


@pytest.fixture
def instagram(settings):
    with FakeInstagram(tokens={IG_TOKEN}) as fake:
        settings.INSTAGRAM_GRAPH_BASE_URL = fake.base_url
        settings.INSTAGRAM_GRAPH_API_VERSION = "v25.0"
        yield fake


@pytest.fixture
def tiktok(settings):
    with FakeTikTok(client_key="sandbox-client-key", client_secret="sandbox-client-secret") as fake:
        settings.TIKTOK_API_BASE_URL = fake.base_url
        settings.TIKTOK_CLIENT_KEY, settings.TIKTOK_CLIENT_SECRET = fake.client_key, fake.client_secret
        fake.add_account("open-id-1", access_token=TT_TOKEN, refresh_token=TT_REFRESH)
        yield fake


@pytest.fixture
def hubspot(settings):
    with FakeHubSpot(tokens={HS_TOKEN}) as fake:
        settings.HUBSPOT_API_BASE_URL = fake.base_url
        yield fake


def _account(tenant, channel: str, **fields) -> ChannelAccount:
    return ChannelAccount.objects.create(tenant=tenant, channel=channel, **fields)


@pytest.fixture
def ig_account(tenant, instagram):
    return _account(
        tenant,
        "instagram",
        access_token=IG_TOKEN,
        ig_user_id=instagram.ig_user_id,
        expires_at=APPROVED_AT + timedelta(days=50),
        refreshed_at=APPROVED_AT - timedelta(days=10),
    )


@pytest.fixture
def tt_account(tenant, tiktok):
    return _account(
        tenant,
        "tiktok",
        access_token=TT_TOKEN,
        refresh_token=TT_REFRESH,
        open_id="open-id-1",
        expires_at=datetime(2026, 12, 31, tzinfo=JST),
    )


@pytest.fixture
def hs_account(tenant, hubspot):
    for n, tags in enumerate([["active"], ["active", "vip"], ["active", "opt_out"], ["inactive"]], 1):
        hubspot.add_contact(f"fan{n}@example.jp", tags)
    return _account(tenant, "hubspot", access_token=HS_TOKEN, hubspot_mode="note")


def channel_template(channel: str, content: dict | None = None, *, name: str = "post", rev: str = "r1"):
    return MessageTemplate.objects.create(
        name=name, rev=rev, channel=channel, messages=content or TEMPLATES[channel]
    )


@pytest.fixture
def approve_channel(fake_backlog, tenant, pump):
    """An approved issue for `channel`, due at 2026-12-10 10:00 JST, with its schedule registered."""

    def make(channel: str, *, content: dict | None = None, body: str | None = None) -> str:
        if content is not False:
            channel_template(channel, content)
        return approve_issue(
            fake_backlog, pump, tenant, summary="新作告知", description=body or channel_body(channel)
        )

    return make

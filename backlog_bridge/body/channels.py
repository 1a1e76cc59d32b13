"""The one list of channels (value of チャネル → label); every other list derives from it."""

from __future__ import annotations

CHANNELS = {"line": "LINE", "tiktok": "TikTok", "instagram": "Instagram", "hubspot": "HubSpot"}
# An issue without チャネル goes nowhere, unless a command sends it: it names a template of this channel.
DEFAULT_CHANNEL = "line"
AUDIENCE_REQUIRED = ("line", "hubspot")
# A post on the account (Instagram, TikTok): it reaches the followers, there is no audience to pick.
FOLLOWER_CHANNELS = tuple(channel for channel in CHANNELS if channel not in AUDIENCE_REQUIRED)
GROUP_CHANNELS = ("line",)

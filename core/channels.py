"""The one list of channels: each kind (what an issue writes after チャネル) with its label, the
dotted path of its package in deliveries/channels/ (imported when first asked for, by
deliveries/channels/registry.py) and what its posts take. Every other list of channels derives
from it: the issue-body grammar's, the registry's, the choices of `ChannelAccount.channel` and
`Connection.platform`. It lives in core, the lowest app, because `Connection` names each channel.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChannelKind:
    label: str  # the brand's own name
    package: str
    # A 対象タグ picks the recipients; False: a post on the account reaches its followers.
    audience: bool = True
    groups: bool = False  # the 対象タグ may name LINE groups (group:)
    # Published from an account of its own (ChannelAccount); LINE uses the tenant's token.
    account: bool = False


CHANNELS: dict[str, ChannelKind] = {
    "line": ChannelKind("LINE", "deliveries.channels.line", groups=True),
    "instagram": ChannelKind("Instagram", "deliveries.channels.instagram", audience=False, account=True),
    "tiktok": ChannelKind("TikTok", "deliveries.channels.tiktok", audience=False, account=True),
    "hubspot": ChannelKind("HubSpot", "deliveries.channels.hubspot", account=True),
}
# An issue without チャネル goes nowhere, unless a command sends it: it names a template of this channel.
DEFAULT_CHANNEL = "line"


def channel_label(kind: str) -> str:
    """The label of `kind`; `kind` itself for one not in the list (a row of a channel since removed)."""
    channel = CHANNELS.get(kind)
    return channel.label if channel else kind

"""Which package serves a channel: one line per channel, `kind → deliveries/channels/<kind>/`.

Each package answers for itself in modules of the same names (see docs/ARCHITECTURE.md,
"Adding a channel"): `publisher`, `templates`, `approval`, `preview`, `correction`,
`effects`, `tokens`, an account channel's `account`, and its own `transport`. A part is
imported when first asked for, by its dotted path, as healthchecks' `TRANSPORTS` does:
the shared modules of deliveries/channels/ depend on no channel, and each channel may
import them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from backlog_bridge.body.channels import DEFAULT_CHANNEL

CHANNEL_PACKAGES: dict[str, str] = {
    "line": "deliveries.channels.line",
    "instagram": "deliveries.channels.instagram",
    "tiktok": "deliveries.channels.tiktok",
    "hubspot": "deliveries.channels.hubspot",
}


def channel_part(kind: str, part: str) -> ModuleType:
    """Module `part` of channel `kind`'s package."""
    return importlib.import_module(f"{CHANNEL_PACKAGES[kind]}.{part}")


def kind_of(channel: str | None) -> str:
    """The channel that sends a task of `channel`: its own, or the default channel's for a
    task without one (a command's send names a template of the default channel)."""
    return channel if channel in CHANNEL_PACKAGES else DEFAULT_CHANNEL

"""Which package serves a channel: the one list of channels (core/channels.py) names each
kind's package, `deliveries/channels/<kind>/`, by its dotted path.

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

from core.channels import CHANNELS, DEFAULT_CHANNEL


def channel_part(kind: str, part: str) -> ModuleType:
    """Module `part` of channel `kind`'s package."""
    return importlib.import_module(f"{CHANNELS[kind].package}.{part}")


def kind_of(channel: str | None) -> str:
    """The channel that sends a task of `channel`: its own, or the default channel's for a
    task without one (a command's send names a template of the default channel)."""
    return channel if channel in CHANNELS else DEFAULT_CHANNEL

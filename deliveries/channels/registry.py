"""Which package serves a channel: `deliveries/channels/<kind>/` for each deliveries.models.Channel.

Each package holds `transport`, `publisher`, `templates`, `effects` and `tokens` modules. A
part is imported when first asked for, by its dotted path, as healthchecks' `TRANSPORTS`
does: the shared modules that dispatch by channel (posts, channel_templates, effects,
tokens, rendering's import) depend on no channel, and each channel may import them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from deliveries.models import Channel

CHANNEL_PACKAGES: dict[str, str] = {kind: f"deliveries.channels.{kind}" for kind in Channel.values}


def channel_part(kind: str, part: str) -> ModuleType:
    """`part` ("transport", "publisher", "templates", "effects", "tokens") of channel `kind`."""
    return importlib.import_module(f"{CHANNEL_PACKAGES[kind]}.{part}")

"""The LINE channel: publisher, template rules, approval, preview, correction, effects and
token upkeep, on the LINE app below deliveries (line/: the transport, the message rules).

What the rest of deliveries uses of it outside the registry is named here, its one way in:
the erasure of a LINE user's id from the channel's records (connected by deliveries'
AppConfig.ready).
"""

from deliveries.channels.line.erasure import line_user_erasing_received

__all__ = ["line_user_erasing_received"]

"""The LINE channel: publisher, template rules, approval, preview, correction, effects and
token upkeep, on the LINE app below deliveries (line/: the transport, the message rules).

What linepush still uses of it is named here, its one way in: the record of a refused token.
"""

from deliveries.channels.line.connection import token_refused

__all__ = ["token_refused"]

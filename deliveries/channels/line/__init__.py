"""The LINE channel: transport, publisher, template rules, approval, preview, correction,
effects and token upkeep.

What the LINE app above (linepush) uses of it is named here, its one way in: the
transport, the message rules (and their JSON Schema), and where linepush registers the checks it keeps.
"""

from deliveries.channels.line.approval import line_message_check_register
from deliveries.channels.line.connection import token_refused
from deliveries.channels.line.message_schema import MESSAGE_SCHEMA
from deliveries.channels.line.templates import (
    MAX_MESSAGES,
    MESSAGE_TYPES,
    TEXT_MAX,
    URL_MAX,
    validate_line_messages,
)
from deliveries.channels.line.transport import LineTransport, line_transport

__all__ = [
    "MAX_MESSAGES",
    "MESSAGE_SCHEMA",
    "MESSAGE_TYPES",
    "TEXT_MAX",
    "URL_MAX",
    "LineTransport",
    "line_message_check_register",
    "line_transport",
    "token_refused",
    "validate_line_messages",
]

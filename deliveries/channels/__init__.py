"""Channel transports: one class per channel, one module per outside service."""

"""The line channel: transport, publisher, template rules, effects and token upkeep."""

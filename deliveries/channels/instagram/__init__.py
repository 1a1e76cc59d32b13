"""The instagram channel: transport, publisher, template rules, effects and token upkeep."""

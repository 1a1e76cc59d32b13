"""The HubSpot channel: transport, publisher, template rules, approval, preview, correction,
effects, token upkeep and account set-up."""

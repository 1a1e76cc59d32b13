"""What deliveries knows of each channel: one package per channel (`<kind>/`), the registry
that finds them, and the parts they share."""

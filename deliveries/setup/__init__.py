"""A tenant's setup: its connections to Backlog and the channels, checked and kept
(`connections`), for the setup commands and the admin."""

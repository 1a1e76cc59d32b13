"""A fifth channel that exists only in tests, written by the recipe of docs/ARCHITECTURE.md
("Adding a channel"): its package and, in the test's fixture, one registry line and its
line in the channel list. Its publisher keeps what it sent in `publisher.SENT`."""

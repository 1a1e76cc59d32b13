"""A fifth channel that exists only in tests, written by the recipe of docs/ARCHITECTURE.md
("Adding a channel"): its package and, in the test's fixture, its row in the list of
channels (core/channels.py). Its publisher keeps what it sent in `publisher.SENT`."""

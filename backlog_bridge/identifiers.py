"""Backlog identifiers checked before they go into a URL path (backlog_bridge/client.py)."""

from __future__ import annotations

import re

# Identifier formats, so that nothing but an identifier ever lands in a URL path (httpx
# resolves `..`, so `ACME-1/../OTHER-1` would reach another project's issue). Project
# keys are upper-case letters, digits and `_`
# (https://developer.nulab.com/docs/backlog/api/2/add-project); an issue key is the
# project key, `-` and the issue's number (`ACME-123`); ids are positive integers.
PROJECT_KEY = re.compile(r"[A-Z0-9_]+")
ISSUE_KEY = re.compile(r"[A-Z0-9_]+-[1-9][0-9]*")
MAX_ID = 2**63 - 1  # ids are stored as BIGINT


def project_key_valid(value: object) -> bool:
    return isinstance(value, str) and PROJECT_KEY.fullmatch(value) is not None


def issue_key_valid(value: object) -> bool:
    return isinstance(value, str) and ISSUE_KEY.fullmatch(value) is not None


def id_valid(value: object) -> bool:
    """A positive integer id as JSON gives it (not a bool, not a string)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID


ID_TEXT = re.compile(r"[1-9][0-9]{0,18}")


def id_like(value: object) -> bool:
    """A positive id as an int or as its decimal text (ids read back from the database)."""
    if isinstance(value, str) and ID_TEXT.fullmatch(value):
        value = int(value)
    return id_valid(value)

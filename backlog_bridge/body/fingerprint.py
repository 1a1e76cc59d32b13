"""The fingerprint of a description's content, which tells a content change from a time change."""

from __future__ import annotations

import hashlib
import re

from backlog_bridge.body.sections import lines_of

_PUBLISH_LINE = re.compile(r"\s*[-*+・]\s*投稿日時\s*[:：]")


def content_fingerprint(description: str | None) -> str:
    # The publish time is left out so that "content changed" and "time changed"
    # while approved can be told apart (seed 000 reschedule vs invalidate).
    kept = [line.rstrip() for line in lines_of(description) if not _PUBLISH_LINE.match(line)]
    normalized = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()

"""Phases of bench/delivery.py beyond LINE: Instagram posts whose containers take seconds,
and the write-backs of a campaign under Backlog's update limit."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from sandbox.stack import Stack

JST = timezone(timedelta(hours=9), "JST")
PUBLISH = "/media_publish"
WINDOW_S = 60.0  # Backlog's rate-limit window (a minute)
RESERVE = 0.1  # the share of each window automedia's pacer leaves to other users of the key


def instagram_approve(stack: Stack, project: str, count: int, due: float) -> dict[str, float]:
    """`count` Instagram posts approved now (a status change each, as a manager would), due at
    the whole second `due` (epoch s): {issue key: due}."""
    if not count:
        return {}
    publish_at = datetime.fromtimestamp(due, JST)
    version = stack.channel_templates["instagram"]["new_release"]
    keys = {}
    for i in range(count):
        body = (
            "## 配信メタ\n- チャネル: Instagram\n"
            f"- 投稿日時: {publish_at:%Y-%m-%d %H:%M:%S} (JST)\n"
            f"- テンプレ: new_release@{version}\n"
            "\n## 文面 / 変数\n- date: 2026-12-10\n"
            f"- title: 新作 {i}\n- image_url: https://cdn.example.jp/bench-{i}.jpg\n"
        )
        issue = stack.backlog.create_issue(
            project, summary=f"Instagram {i}", description=body, status="処理中"
        )
        stack.backlog.update_issue(issue["issueKey"], status="automedia承認")
        keys[issue["issueKey"]] = due
    return keys


def instagram_published(stack: Stack) -> int:
    return len(stack.instagram.published())


def instagram_lateness(stack: Stack, due: float) -> dict[str, object]:
    """media_publish − due of each post, and what Instagram refused (a publish before
    FINISHED answers 9007)."""
    calls = [r for r in stack.instagram.calls(method="POST") if r.path.endswith(PUBLISH)]
    done = sorted(r.received_at - due for r in calls if r.status == 200)
    return {
        "published": len(done),
        "publish_calls": len(calls),
        "refused_not_ready": sum(1 for r in calls if r.status != 200),
        "double_publishes": stack.instagram.double_publishes,
        "lateness_s": done,
        "first_s": done[0] if done else None,
        "max_s": done[-1] if done else None,
    }


def update_limit_set(stack: Stack, limit: int) -> float:
    """The fake Backlog enforces `limit` writes per minute from now on; returns when (epoch s)."""
    stack.backlog.set_rate_limits(read=10**6, update=limit, window=WINDOW_S)
    return stack.backlog.clock()


def writeback_pacing(
    stack: Stack, keys: list[str], due: float, limit: int, since: float
) -> dict[str, object]:
    """How long the write-backs of `keys` took after `due` under `limit` writes a minute, and
    the 429s Backlog answered since the limit was set. Allowed: the windows that `limit` less
    the pacer's reserve needs for them, plus 10 %."""
    wanted = {f"/api/v2/issues/{key}" for key in keys}
    every = list(stack.backlog.requests)
    requests = [r for r in every if r.received_at >= since]
    written = [
        r.received_at for r in requests if r.method == "PATCH" and r.path in wanted and r.status == 200
    ]
    before = [r for r in every if r.received_at < since and r.method == "PATCH" and r.path in wanted]
    per_window = math.floor(limit * (1 - RESERVE))
    allowed = math.ceil(len(keys) / per_window) * WINDOW_S * 1.1
    done = max(written) - due if written else None
    return {
        "limit_per_min": limit,
        "written": len(written),
        "of": len(keys),
        "done_s": done,
        "allowed_s": allowed,
        "429s": sum(1 for r in requests if r.status == 429),
        "written_before_the_limit": len(before),
        "met": len(written) == len(keys)
        and done is not None
        and done <= allowed
        and not any(r.status == 429 for r in requests),
    }

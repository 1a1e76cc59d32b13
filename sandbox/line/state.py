"""The fake LINE channel's state: sends accepted, retry keys, quota, groups, statistics.
Served over HTTP by sandbox/line/server.py; the endpoints are in api.py."""

from __future__ import annotations

import itertools
import random
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from sandbox.line.channel import ChannelSettings
from sandbox.line.coupons import LineCoupons
from sandbox.line.narrowcast import LineNarrowcasts
from sandbox.line.records import (
    DEFAULT_MEMBER_COUNT,
    INVALID_QUOTE_TOKEN,
    INVALID_TO,
    MONTHLY_LIMIT,
    OVERVIEW_KEYS,
    PUSH,
    QUOTABLE_TYPES,
    QUOTING_TYPES,
    RETRY_KEY_ACCEPTED,
    RETRY_KEY_TTL,
    Accepted,
    Chaos,
    Fault,
    Group,
    Json,
    LineError,
    RecordedLineRequest,
)


class LineChannel:
    """A LINE channel in memory: sends, retry keys, quota, groups, profiles and statistics."""

    def __init__(self, *, channel_tokens: set[str] | None = None, channel_secret: str = "") -> None:
        self.channel_tokens = None if channel_tokens is None else frozenset(channel_tokens)
        self.channel = ChannelSettings(channel_secret=channel_secret)
        """The bot's info and webhook endpoint (sandbox/line/channel.py); tests may change them."""
        self.requests: list[RecordedLineRequest] = []
        self.clock: Callable[[], float] = time.time
        """Wall clock for retry-key expiry; tests may replace it."""
        self._lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        self._faults: list[Fault] = []
        self._chaos: Chaos | None = None
        self._retry_keys: dict[str, Accepted] = {}
        self._groups: dict[str, Group] = {}
        self._rooms: dict[str, int] = {}  # room id → its members, the bot excluded
        self._used_reply_tokens: set[str] = set()
        self._quote_tokens: set[str] = set()
        self._units_used: set[str] = set()
        self._unit_stats: dict[str, Json] = {}
        self._quota_type = "none"
        self._quota_value = 0
        self._total_usage = 0
        self._coupons = LineCoupons()
        self._narrowcasts = LineNarrowcasts(self)
        self._message_ids = itertools.count(600_000_000_000_000_000 + secrets.randbelow(10**15))

    # setup

    def fail_next(
        self,
        status: int,
        *,
        count: int = 1,
        path_prefix: str | None = None,
        headers: dict[str, str] | None = None,
        body: Any = None,
        delay: float = 0.0,
        then_accept: bool = False,
    ) -> None:
        """Answer the next ``count`` authenticated requests under ``path_prefix`` with a fault.

        ``status`` below 400 (use 0): wait ``delay`` seconds, then serve normally (a timeout
        after which the message was sent anyway). An error status: wait, then answer it
        with ``body`` (default: LINE's message for that status) and ``headers``; nothing is
        sent unless ``then_accept`` is true, in which case the request is processed first and
        only its answer is replaced ("LINE accepted it but the answer was lost").
        """
        fault = Fault(status, count, path_prefix, dict(headers or {}), body, delay, then_accept)
        with self._lock:
            self._faults.append(fault)

    def set_chaos(
        self,
        *,
        fail_rate: float = 0.0,
        hang_rate: float = 0.0,
        hang_seconds: float = 0.0,
        seed: int = 0,
        path_prefix: str = PUSH,
        latency_seconds: float = 0.0,
    ) -> None:
        """Random faults from now on (until ``reset``), for chaos campaigns: of the
        authenticated requests under ``path_prefix``, a ``fail_rate`` share answers 500 and
        sends nothing, and a ``hang_rate`` share is processed (sent, retry key remembered,
        recorded at once) and then answered only after ``hang_seconds``. The draws come from
        ``random.Random(seed)`` in arrival order, so one client sending one request at a time
        sees the same sequence on every run. ``fail_next`` faults are taken first. The other
        answers come ``latency_seconds`` after their request was recorded."""
        if not (0.0 <= fail_rate and 0.0 <= hang_rate and fail_rate + hang_rate <= 1.0):
            raise ValueError("fail_rate and hang_rate are shares of the requests (sum at most 1)")
        if hang_seconds < 0 or latency_seconds < 0:
            raise ValueError("hang_seconds and latency_seconds must not be negative")
        chaos = Chaos(fail_rate, hang_rate, hang_seconds, path_prefix, random.Random(seed), latency_seconds)
        with self._lock:
            self._chaos = chaos

    def chaos_counts(self) -> dict[str, int]:
        """How many requests the chaos of ``set_chaos`` let through ("ok"), failed, hung."""
        with self._lock:
            return dict(self._chaos.counts) if self._chaos is not None else {}

    def add_group(self, group_id: str, *, name: str = "グループ", member_count: int = 3) -> None:
        if not group_id.startswith("C"):
            raise ValueError("LINE group ids start with 'C'")
        with self._lock:
            self._groups[group_id] = Group(group_id, name, member_count)

    def add_room(self, room_id: str, *, member_count: int = DEFAULT_MEMBER_COUNT) -> None:
        if not room_id.startswith("R"):
            raise ValueError("LINE room ids start with 'R'")
        with self._lock:
            self._rooms[room_id] = member_count

    def add_coupon(self, title: str, *, end: int = 1924959599, status: str = "RUNNING") -> str:
        """A coupon made in LINE Official Account Manager; returns its couponId."""
        with self._lock:
            return self._coupons.add(title=title, end=end, status=status)

    def close_coupon(self, coupon_id: str) -> None:
        """Close a coupon as LINE Official Account Manager does (no API call seen)."""
        with self._lock:
            self._coupons.coupons[coupon_id]["status"] = "CLOSED"

    def set_quota(self, *, type: str = "limited", value: int = 5000, total_usage: int = 0) -> None:
        if type not in ("limited", "none"):
            raise ValueError("quota type is 'limited' or 'none'")
        with self._lock:
            self._quota_type = type
            self._quota_value = value
            self._total_usage = total_usage

    def set_narrowcast_timing(
        self, *, audience_seconds: float = 1.0, waiting_seconds: float = 1.0, sending_seconds: float = 1.0
    ) -> None:
        """How long (by ``clock``) an upload takes to be READY and a narrowcast stays
        ``waiting``, then ``sending``, before it succeeds or fails."""
        with self._lock:
            narrowcasts = self._narrowcasts
            narrowcasts.audience_seconds = audience_seconds
            narrowcasts.waiting_seconds = waiting_seconds
            narrowcasts.sending_seconds = sending_seconds

    def fail_narrowcast(self, error_code: int = 1) -> None:
        """The next narrowcast accepted fails with ``error_code`` (1: an internal error)."""
        with self._lock:
            self._narrowcasts.forced_errors.append(error_code)

    def audiences(self) -> dict[int, list[str]]:
        """The audiences for uploading user ids: {audienceGroupId: ids}."""
        with self._lock:
            return {n: list(a.ids) for n, a in self._narrowcasts.audiences.items()}

    def set_unit_stats(
        self,
        unit: str,
        overview: dict,
        *,
        messages: list[dict] | None = None,
        clicks: list[dict] | None = None,
    ) -> None:
        """The answer of the per-unit statistics endpoint for ``unit`` (any period)."""
        stats = {
            "overview": dict.fromkeys(OVERVIEW_KEYS) | dict(overview),
            "messages": list(messages or []),
            "clicks": list(clicks or []),
        }
        with self._lock:
            self._unit_stats[unit] = stats

    def reset(self) -> None:
        """Forget requests, faults, retry keys, groups, quota, statistics; keep the tokens."""
        with self._lock:
            self.requests.clear()
            self._clear()

    # inspection

    def sent(self, path: str | None = None) -> list[RecordedLineRequest]:
        """Accepted sends (push, multicast, reply) in the order they were answered; ``path``
        filters ("push" is short for "/v2/bot/message/push").

        A request is recorded once it is answered, so a send accepted before an injected
        delay (``then_accept``) shows up here only when its delayed answer goes out.
        """
        if path is not None and not path.startswith("/"):
            path = f"/v2/bot/message/{path}"
        with self._lock:
            return [r for r in self.requests if r.accepted and (path is None or r.path == path)]

    @property
    def total_usage(self) -> int:
        with self._lock:
            return self._total_usage

    def _draw_chaos(self, path: str) -> tuple[str | None, float]:
        """The chaos outcome for one request ("ok", "fail", "hang" or None) and how long its
        answer is held back once recorded."""
        with self._lock:
            if self._chaos is None:
                return None, 0.0
            outcome = self._chaos.draw(path)
            held = {"hang": self._chaos.hang_seconds, "ok": self._chaos.latency_seconds}
            return outcome, held.get(outcome, 0.0)

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.path_prefix is None or path.startswith(fault.path_prefix):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    # state changes behind the endpoints; the caller holds the lock

    def _sent_messages(self, messages: list[Json]) -> list[Json]:
        sent = []
        for message in messages:
            entry = {"id": str(next(self._message_ids))}
            if message.get("type") in QUOTABLE_TYPES:
                entry["quoteToken"] = secrets.token_urlsafe(48)
                self._quote_tokens.add(entry["quoteToken"])
            sent.append(entry)
        return sent

    def _check_quotes(self, messages: list[Json]) -> None:
        """A quoted message must be one this channel sent (a quoteToken the fake issued)."""
        for message in messages:
            token = message.get("quoteToken") if message.get("type") in QUOTING_TYPES else None
            if token is not None and token not in self._quote_tokens:
                raise LineError(400, INVALID_QUOTE_TOKEN)

    def _check_retry_key(self, key: str | None) -> None:
        if key is None:
            return
        accepted = self._retry_keys.get(key)
        if accepted is None:
            return
        if self.clock() - accepted.at > RETRY_KEY_TTL:
            del self._retry_keys[key]
            return
        extra = {"sentMessages": accepted.sent_messages} if accepted.sent_messages else None
        raise LineError(
            409,
            RETRY_KEY_ACCEPTED,
            headers={"x-line-accepted-request-id": accepted.request_id},
            extra=extra,
        )

    def _recipient_count(self, to: str) -> int:
        if to.startswith("U"):
            return 1
        if to.startswith("R"):
            return self._rooms.get(to, DEFAULT_MEMBER_COUNT)
        group = self._groups.get(to)
        if group is not None:
            return group.member_count
        if self._groups:
            raise LineError(400, INVALID_TO)
        return DEFAULT_MEMBER_COUNT

    def _charge(self, cost: int) -> None:
        if self._quota_type == "limited" and self._total_usage + cost > self._quota_value:
            raise LineError(429, MONTHLY_LIMIT)
        self._total_usage += cost

    def _accept(self, body: Json, key: str | None, request_id: str, cost: int, keep: bool) -> list[Json]:
        self._check_retry_key(key)
        self._check_quotes(body["messages"])
        self._charge(cost)
        sent = self._sent_messages(body["messages"])
        if key is not None:
            self._retry_keys[key] = Accepted(self.clock(), request_id, sent if keep else None)
        self._units_used.update(body.get("customAggregationUnits") or ())
        return sent

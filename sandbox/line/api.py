"""The fake LINE's Messaging API endpoints: routing, body checks, sends, quota, statistics,
groups, profiles, coupons (sandbox/line/coupons.py) and narrowcast with its audiences
(sandbox/line/narrowcast.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from urllib.parse import unquote

from sandbox.line.channel import ChannelApi
from sandbox.line.records import (
    MAX_AGGREGATION_DAYS,
    MULTICAST,
    NARROWCAST,
    OVERVIEW_KEYS,
    PUSH,
    REPLY,
    RETRY_KEY,
    RETRY_KEY_PATHS,
    UNIT_NAME,
    USER_ID,
    LineError,
    LineReply,
    LineRequest,
    invalid_body,
)
from sandbox.line.spec import spec_errors, spec_warm
from sandbox.line.state import LineChannel
from sandbox.line.validation import check_messages, check_multicast, check_push, check_reply, parse_yyyymmdd

_Handler = Callable[..., LineReply]


class LineApi:
    """The Messaging API endpoints; each takes (request, request_id, **path parameters)."""

    def __init__(self, fake: LineChannel) -> None:
        self._fake = fake
        spec_warm()
        self._exact: dict[str, dict[str, _Handler]] = {
            PUSH: {"POST": self.push},
            MULTICAST: {"POST": self.multicast},
            REPLY: {"POST": self.reply},
            "/v2/bot/message/quota": {"GET": self.quota},
            "/v2/bot/message/quota/consumption": {"GET": self.consumption},
            "/v2/bot/message/aggregation/info": {"GET": self.aggregation_info},
            "/v2/bot/insight/message/event/aggregation": {"GET": self.unit_statistics},
            "/v2/bot/coupon": {"GET": self._coupons("list"), "POST": self._coupons("create")},
            NARROWCAST: {"POST": self.narrowcast},
            "/v2/bot/message/progress/narrowcast": {"GET": self._narrowcasts("progress")},
            "/v2/bot/audienceGroup/upload": {
                "POST": self._narrowcasts("audience_create"),
                "PUT": self._narrowcasts("audience_add"),
            },
            **ChannelApi(fake.channel).routes(),
        }
        patterns: list[tuple[str, str, _Handler]] = [
            ("GET", r"/v2/bot/group/(?P<group_id>[^/]+)/summary", self.group_summary),
            ("GET", r"/v2/bot/group/(?P<group_id>[^/]+)/members/count", self.group_member_count),
            ("GET", r"/v2/bot/room/(?P<room_id>[^/]+)/members/count", self.room_member_count),
            ("GET", r"/v2/bot/profile/(?P<user_id>[^/]+)", self.profile),
            ("GET", r"/v2/bot/coupon/(?P<coupon_id>[^/]+)", self._coupons("detail")),
            ("PUT", r"/v2/bot/coupon/(?P<coupon_id>[^/]+)/close", self._coupons("close")),
            ("GET", r"/v2/bot/audienceGroup/(?P<audience_id>[0-9]+)", self._narrowcasts("audience_get")),
            (
                "DELETE",
                r"/v2/bot/audienceGroup/(?P<audience_id>[0-9]+)",
                self._narrowcasts("audience_delete"),
            ),
            (
                "POST",
                r"/v2/bot/message/validate/(?P<kind>reply|push|multicast|narrowcast|broadcast)",
                self.validate,
            ),
        ]
        self._patterns = [(method, re.compile(path), handler) for method, path, handler in patterns]

    def _coupons(self, name: str) -> _Handler:
        """A coupon endpoint of sandbox/line/coupons.py, under the channel's lock."""

        def handle(request: LineRequest, request_id: str, **params: str) -> LineReply:
            with self._fake._lock:
                return getattr(self._fake._coupons, name)(request, request_id, **params)

        return handle

    def _narrowcasts(self, name: str) -> _Handler:
        """An endpoint of sandbox/line/narrowcast.py, under the channel's lock."""

        def handle(request: LineRequest, request_id: str, **params: str) -> LineReply:
            with self._fake._lock:
                return getattr(self._fake._narrowcasts, name)(request, request_id, **params)

        return handle

    def dispatch(self, request: LineRequest, request_id: str) -> LineReply:
        handler, params = self._resolve(request.method, request.path)
        if "x-line-retry-key" in request.headers and request.path not in RETRY_KEY_PATHS:
            raise LineError(400, "The retry key is not supported on this endpoint")
        if request.method == "POST":
            self._check_json_body(request)
        return handler(request, request_id, **params)

    def _resolve(self, method: str, path: str) -> tuple[_Handler, dict[str, str]]:
        by_method = self._exact.get(path)
        if by_method is not None:
            handler = by_method.get(method)
            if handler is None:
                raise LineError(405, "Method not allowed")
            return handler, {}
        matched = False
        for route_method, pattern, handler in self._patterns:
            match = pattern.fullmatch(path)
            if match is not None:
                matched = True
                if route_method == method:
                    return handler, {name: unquote(value) for name, value in match.groupdict().items()}
        raise LineError(405, "Method not allowed") if matched else LineError(404, "Not found")

    @staticmethod
    def _check_json_body(request: LineRequest) -> None:
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise LineError(415, "Unsupported Media Type")
        if not request.parsed:
            raise LineError(400, "The request body could not be parsed as JSON")
        if not isinstance(request.body, dict):
            raise LineError(400, "The request body must be a JSON object")

    @staticmethod
    def _retry_key(request: LineRequest) -> str | None:
        key = request.headers.get("x-line-retry-key")
        if key is None:
            return None
        if RETRY_KEY.fullmatch(key.strip()) is None:
            raise LineError(400, "The value of the X-Line-Retry-Key header must be a UUID")
        return key.strip().lower()

    # sends

    def push(self, request: LineRequest, request_id: str) -> LineReply:
        key = self._retry_key(request)
        body = request.body
        check_push(body)
        with self._fake._lock:
            cost = self._fake._recipient_count(body["to"])
            sent = self._fake._accept(body, key, request_id, cost, keep=True)
        return LineReply(200, {"sentMessages": sent}, accepted=True)

    def multicast(self, request: LineRequest, request_id: str) -> LineReply:
        key = self._retry_key(request)
        body = request.body
        check_multicast(body)
        with self._fake._lock:
            self._fake._accept(body, key, request_id, len(body["to"]), keep=False)
        return LineReply(200, {}, accepted=True)

    def narrowcast(self, request: LineRequest, request_id: str) -> LineReply:
        key = self._retry_key(request)
        with self._fake._lock:
            return self._fake._narrowcasts.narrowcast(request, request_id, key)

    def reply(self, request: LineRequest, request_id: str) -> LineReply:
        body = request.body
        check_reply(body)
        with self._fake._lock:
            if body["replyToken"] in self._fake._used_reply_tokens:
                raise LineError(400, "Invalid reply token")
            self._fake._check_quotes(body["messages"])
            self._fake._used_reply_tokens.add(body["replyToken"])
            sent = self._fake._sent_messages(body["messages"])
        return LineReply(200, {"sentMessages": sent}, accepted=True)

    def validate(self, request: LineRequest, request_id: str, kind: str) -> LineReply:
        """The spec's `ValidateMessageRequest` (spec.py), then the limits the spec leaves to
        the docs (text length, https URLs: validation.py); one detail per property."""
        errors = spec_errors(request.body)
        own: list[tuple[str, str]] = []
        check_messages(request.body, own)
        reported = {prop for prop, _ in errors}
        errors += [(prop, message) for prop, message in own if prop not in reported]
        if errors:
            raise invalid_body(errors)
        return LineReply(200, {})

    # quota and statistics

    def quota(self, request: LineRequest, request_id: str) -> LineReply:
        with self._fake._lock:
            if self._fake._quota_type == "none":
                return LineReply(200, {"type": "none"})
            return LineReply(200, {"type": "limited", "value": self._fake._quota_value})

    def consumption(self, request: LineRequest, request_id: str) -> LineReply:
        with self._fake._lock:
            return LineReply(200, {"totalUsage": self._fake._total_usage})

    def aggregation_info(self, request: LineRequest, request_id: str) -> LineReply:
        with self._fake._lock:
            return LineReply(200, {"numOfCustomAggregationUnits": len(self._fake._units_used)})

    def unit_statistics(self, request: LineRequest, request_id: str) -> LineReply:
        params = request.query()
        errors: list[tuple[str, str]] = []
        unit = params.get("customAggregationUnit", [""])[0]
        if UNIT_NAME.fullmatch(unit) is None:
            errors.append(("customAggregationUnit", 'Must match "^[a-zA-Z0-9_]{1,30}$"'))
        start = parse_yyyymmdd(params, "from", errors)
        end = parse_yyyymmdd(params, "to", errors)
        if start is not None and end is not None and not 0 <= (end - start).days <= MAX_AGGREGATION_DAYS:
            errors.append(("to", f"Must be between 'from' and {MAX_AGGREGATION_DAYS} days after it"))
        if errors:
            details = [{"message": message, "property": prop} for prop, message in errors]
            raise LineError(400, f"The request has {len(errors)} error(s)", details=details)
        with self._fake._lock:
            stats = self._fake._unit_stats.get(unit)
            if stats is None:
                return LineReply(
                    200, {"overview": dict.fromkeys(OVERVIEW_KEYS), "messages": [], "clicks": []}
                )
            return LineReply(200, json.loads(json.dumps(stats)))

    # groups and profiles

    def group_summary(self, request: LineRequest, request_id: str, group_id: str) -> LineReply:
        with self._fake._lock:
            group = self._fake._groups.get(group_id)
            if group is None:
                raise LineError(404, "Not found")
            return LineReply(200, group.summary())

    def group_member_count(self, request: LineRequest, request_id: str, group_id: str) -> LineReply:
        with self._fake._lock:
            group = self._fake._groups.get(group_id)
            if group is None:
                raise LineError(404, "Not found")
            return LineReply(200, {"count": group.member_count})

    def room_member_count(self, request: LineRequest, request_id: str, room_id: str) -> LineReply:
        """`RoomMemberCountResponse`, the bot excluded; 404 for a room the bot is not in
        (https://developers.line.biz/en/reference/messaging-api/#get-members-room-count)."""
        with self._fake._lock:
            count = self._fake._rooms.get(room_id)
            if count is None:
                raise LineError(404, "Not found")
            return LineReply(200, {"count": count})

    def profile(self, request: LineRequest, request_id: str, user_id: str) -> LineReply:
        if USER_ID.fullmatch(user_id) is None:
            raise LineError(404, "Not found")
        return LineReply(
            200,
            {
                "userId": user_id,
                "displayName": "LINE ユーザー",
                "pictureUrl": f"https://profile.line-scdn.net/fake-user/{user_id}",
                "language": "ja",
            },
        )
